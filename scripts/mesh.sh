#!/usr/bin/env bash
# Spawns N coordlab nodes on a connected graph with a console: scripts/mesh.sh N [--topology T] [options]
# (see --help).
# Builds coordlab in release mode on the first run (cheap afterwards) and runs in the directory
# you typed it in: relative paths such as --logs mylogs are yours (see scripts/coordlab).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/coordlab" mesh "$@"
