#!/usr/bin/env bash
# Benchmarks (figures, not tests): loopback floor, cost per hop, memory per node, and every
# election algorithm's time and message counts beside the formulas, for n = 8, 64 and 256,
# and a junk flood at the leader of a ring of 8.
# Options pass to `coordlab bench` (e.g. --only elections --sizes 8,64).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec "${CARGO_TARGET_DIR:-target}/release/coordlab" bench "$@"
