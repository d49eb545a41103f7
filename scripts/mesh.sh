#!/usr/bin/env bash
# Spawns N coordlab nodes on a connected graph with a console: scripts/mesh.sh N [--topology T] [options]
# (see --help). Builds coordlab in release mode on the first run (cheap afterwards); works from any directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Not quiet: a first build takes minutes, and cargo's own progress shows that it is working.
echo "mesh.sh: building coordlab (release; the first build takes a few minutes, later ones seconds)..." >&2
cargo build --release
exec "${CARGO_TARGET_DIR:-target}/release/coordlab" mesh "$@"
