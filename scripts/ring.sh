#!/usr/bin/env bash
# Spawns a ring of N coordlab nodes with a console: scripts/ring.sh N [options] (see --help).
# Builds coordlab in release mode on the first run (cheap afterwards); works from any directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Not quiet: a first build takes minutes, and cargo's own progress shows that it is working.
echo "ring.sh: building coordlab (release; the first build takes a few minutes, later ones seconds)..." >&2
cargo build --release
exec "${CARGO_TARGET_DIR:-target}/release/coordlab" ring "$@"
