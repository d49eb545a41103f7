#!/usr/bin/env bash
# Spawns a ring of N coordlab nodes with a console: scripts/ring.sh N [options] (see --help).
# Builds coordlab in release mode on the first run (cheap afterwards); works from any directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --quiet
exec "${CARGO_TARGET_DIR:-target}/release/coordlab" ring "$@"
