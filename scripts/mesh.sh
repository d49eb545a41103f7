#!/usr/bin/env bash
# Spawns N coordlab nodes on a connected graph with a console: scripts/mesh.sh N [--topology T] [options]
# (see --help). Builds coordlab in release mode on the first run (cheap afterwards); works from any directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --quiet
exec "${CARGO_TARGET_DIR:-target}/release/coordlab" mesh "$@"
