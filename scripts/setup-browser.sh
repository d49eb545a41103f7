#!/usr/bin/env bash
# Finds or installs what the picture tests look through: headless Chromium (Debian's
# `chromium` package) and, when npm is there, the Mermaid CLI (`@mermaid-js/mermaid-cli`,
# installed under target/tools, using that Chromium rather than downloading its own).
#
# Prints two lines, `chromium=PATH` and `mmdc=PATH` (empty when not available), and exits 0
# either way: a test that needs one skips with a clear message when it is empty.
# Set COORDLAB_NO_INSTALL=1 to only look, never install.
set -u
cd "$(dirname "$0")/.."
log=target/tools/setup-browser.log
mkdir -p target/tools
: >"$log"

find_chromium() {
    for c in chromium chromium-browser google-chrome; do
        if command -v "$c" >/dev/null 2>&1; then
            command -v "$c"
            return
        fi
    done
}

chromium=$(find_chromium)
if [ -z "$chromium" ] && [ -z "${COORDLAB_NO_INSTALL:-}" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing chromium with apt-get (log: $log)" >&2
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get update -qq >>"$log" 2>&1
    timeout 300 apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >>"$log" 2>&1
    chromium=$(find_chromium)
fi

mmdc=target/tools/node_modules/.bin/mmdc
if [ ! -x "$mmdc" ] && [ -n "$chromium" ] && [ -z "${COORDLAB_NO_INSTALL:-}" ] && command -v npm >/dev/null; then
    echo "installing @mermaid-js/mermaid-cli with npm (log: $log)" >&2
    # Puppeteer would download a browser of its own; it uses the Chromium above instead.
    PUPPETEER_SKIP_DOWNLOAD=1 timeout 300 npm install --prefix target/tools --no-audit --no-fund \
        @mermaid-js/mermaid-cli >>"$log" 2>&1
fi
if [ -x "$mmdc" ] && [ -n "$chromium" ]; then
    printf '{"executablePath": "%s", "args": ["--no-sandbox", "--disable-gpu"]}\n' "$chromium" \
        >target/tools/puppeteer.json
    mmdc=$(pwd)/$mmdc
else
    mmdc=
fi
echo "chromium=$chromium"
echo "mmdc=$mmdc"
