#!/usr/bin/env bash
# The chaos soak: scripts/chaos.sh N [--algo NAME] [--topology SPEC] [--duration SECS] [--seed S] ...
# Random pauses and kills (sometimes of the leader) for the duration, then the checker and the
# family's criteria; exit status 1 when one fails.
# Builds coordlab in release mode on the first run (cheap afterwards) and runs in the directory
# you typed it in: relative paths such as --logs mylogs are yours (see scripts/coordlab).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/coordlab" chaos "$@"
