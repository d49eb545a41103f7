#!/usr/bin/env bash
# The chaos soak: scripts/chaos.sh N [--algo NAME] [--mesh SPEC] [--duration SECS] [--seed S] ...
# Random pauses and kills (sometimes of the leader) for the duration, then the checker and the
# soak's criteria; exit status 1 when one fails. Builds coordlab in release mode on the first run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --quiet
exec "${CARGO_TARGET_DIR:-target}/release/coordlab" chaos "$@"
