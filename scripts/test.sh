#!/usr/bin/env bash
# Runs every test (unit, simulator and process-level) in release mode: scripts/test.sh [cargo test args].
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec cargo test --release "$@"
