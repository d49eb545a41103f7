#!/usr/bin/env bash
# Finds or installs what the kernel network backend (`--net kernel`) needs: Debian's `nftables`
# package (the `nft` command), and checks that it works here (root, and a kernel with nf_tables).
#
# Prints one line, `nft=PATH` (empty when not usable), and exits 0 either way: a test that needs
# it skips with a clear message when it is empty. Set COORDLAB_NO_INSTALL=1 to only look.
set -u
cd "$(dirname "$0")/.."
log=target/tools/setup-nftables.log
mkdir -p target/tools
: >"$log"

nft=$(command -v nft 2>/dev/null || true)
if [ -z "$nft" ] && [ -z "${COORDLAB_NO_INSTALL:-}" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing nftables with apt-get (log: $log)" >&2
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get update -qq >>"$log" 2>&1
    timeout 300 apt-get install -y -qq --no-install-recommends nftables >>"$log" 2>&1
    nft=$(command -v nft 2>/dev/null || true)
fi
# Installed is not enough: not root, or a kernel without nf_tables, makes every rule fail.
if [ -n "$nft" ] && ! "$nft" list tables >>"$log" 2>&1; then
    echo "nft is installed but does not work here (not root, or no nf_tables): see $log" >&2
    nft=
fi
echo "nft=$nft"
