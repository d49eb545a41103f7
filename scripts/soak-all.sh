#!/usr/bin/env bash
# A chaos soak of every algorithm of every family, one after another, and a table of the
# results: scripts/soak-all.sh [SECS] (default 75) [NODES] (default 5).
# Each soak is `coordlab chaos NODES --algo A --duration SECS --seed 1` on the topology the
# algorithm runs on (a ring, or a complete graph), judged by its family's own criteria; clock
# algorithms on skewed clocks (--clock-skew random:100,50).
# Figures vary from run to run and machine to machine: they are a record, not a promise.
# Set COORDLAB to a coordlab binary to skip the release build (e.g. target/test-opt/coordlab).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
secs="${1:-75}"
nodes="${2:-5}"
bin="${COORDLAB:-$here/coordlab}"
logs="$(mktemp -d "${TMPDIR:-/tmp}/coordlab-soak-XXXXXX")"
printf '| algorithm | family | topology | faults injected | verdict | criteria not met |\n'
printf '|---|---|---|---|---|---|\n'
# `coordlab algos` is the registry: a "family: ..." line, then "  NAME  WHERE  SUMMARY" lines.
"$bin" algos | awk '
    /^[a-z]+: / { family = substr($1, 1, length($1) - 1); next }
    /^  [a-z][a-z-]+ +(ring|bidirectional ring|complete graph|any connected graph) / { where = ($0 ~ /complete graph/) ? "complete" : "ring"; print $1, family, where }
' | while read -r algo family where; do
    topo=()
    [[ "$where" == complete ]] && topo=(--topology complete)
    # Clocks that agree from the start would make a clock soak trivial: skew them, so that a
    # restarted node comes back off true time and must be brought back within bound.
    [[ "$family" == clock ]] && topo+=(--clock-skew random:100,50)
    out="$logs/$algo.out"
    status=0
    "$bin" chaos "$nodes" --algo "$algo" "${topo[@]}" --duration "$secs" --seed 1 --logs "$logs/$algo" \
        </dev/null >"$out" 2>&1 || status=$?
    faults=$(grep -c '^chaos: \(paused\|killed\)' "$out" || true)
    verdict=$(grep -o 'chaos: \(passed\|FAILED\)' "$out" | tail -1 | cut -d' ' -f2 || true)
    failed=$(grep '^  FAILED: ' "$out" | sed 's/^  FAILED: //; s/|/\\|/g' | cut -c1-140 | paste -sd ';' - || true)
    printf '| %s | %s | %s | %s | %s (exit %s) | %s |\n' "$algo" "$family" "$where" "$faults" "${verdict:-none}" "$status" "${failed:--}"
done
echo
echo "(each soak: $nodes nodes, $secs s, seed 1; outputs in $logs)"
