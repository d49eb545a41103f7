#!/usr/bin/env bash
# Benchmarks (figures, not tests): loopback floor, cost per hop, election time and message
# counts for rings of 8, 64 and 256, resident memory per node. Options pass to `coordlab bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec target/release/coordlab bench "$@"
