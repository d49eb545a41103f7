#!/usr/bin/env bash
# Spawns a ring of N coordlab nodes with a console: scripts/ring.sh N [options] (see --help).
# Builds coordlab in release mode on the first run (cheap afterwards) and runs in the directory
# you typed it in: relative paths such as --logs mylogs are yours (see scripts/coordlab).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/coordlab" ring "$@"
