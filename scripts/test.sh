#!/usr/bin/env bash
# Runs every test (unit, simulator and process-level) optimised (profile test-opt: release without LTO): scripts/test.sh [cargo test args].
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec cargo test --profile test-opt "$@"
