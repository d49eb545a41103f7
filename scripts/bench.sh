#!/usr/bin/env bash
# Benchmarks (figures, not tests): loopback floor, cost per hop, memory per node, and every
# election algorithm's time and message counts beside the formulas, for n = 8, 64 and 256,
# and a junk flood at the leader of a ring of 8.
# Options pass to `coordlab bench` (e.g. --only elections --sizes 8,64).
# Builds coordlab in release mode on the first run (cheap afterwards) and runs in the directory
# you typed it in: relative paths such as --logs mylogs are yours (see scripts/coordlab).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/coordlab" bench "$@"
