#!/usr/bin/env bash
# A chaos soak of every algorithm of every family, one after another, and a table of the
# results: scripts/soak-all.sh [SECS] (default 75) [NODES] (default 5) [SEEDS] (default "1").
# Each soak is `coordlab chaos NODES --algo A --duration SECS --seed S` on the topology the
# algorithm runs on (a ring, or a complete graph), judged by its family's own criteria; clock
# algorithms on skewed clocks (--clock-skew random:100,50). Every mutual-exclusion algorithm
# is soaked a second time with --fencing, and those that host the failure detector a third
# time with --fencing --set detector=D (D by the seed: 1 fixed, 2 phi, 3 swim, ...); every
# election a second time with --set majority=true. A mutex soak's figures (entries per second before the first fault and
# after the last was undone, longest stall, violations, stale tokens rejected) come from the
# `figures:` line that chaos prints.
# Figures vary from run to run and machine to machine: they are a record, not a promise.
# Set COORDLAB to a coordlab binary to skip the release build (e.g. target/test-opt/coordlab);
# set ONLY to a space-separated list of algorithms to soak only those, and VARIANTS to a list of
# variants (plain, fencing, majority, detector) to soak only those; set EXTRA to arguments given
# to every soak (e.g. EXTRA="--net user" for the network backend a user who is not root gets).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
secs="${1:-75}"
nodes="${2:-5}"
seeds="${3:-1}"
bin="${COORDLAB:-$here/coordlab}"
logs="$(mktemp -d "${TMPDIR:-/tmp}/coordlab-soak-XXXXXX")"
printf '| algorithm | variant | seed | family | topology | faults | verdict | entries/s before the first fault | entries/s after the last | longest stall | violations (resource / nodes; not explained) | stale tokens rejected | criteria not met |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
# `coordlab algos` is the registry: a "family: ..." line, then "  NAME  WHERE  SUMMARY" lines,
# each followed by its keys; a mutex algorithm that hosts the failure detector says so in a line
# "(and the failure detector's keys ...".
"$bin" algos | awk '
    function flush() { if (algo != "") print algo, fam, where, detector; algo = "" }
    /^[a-z]+: / { flush(); family = substr($1, 1, length($1) - 1); next }
    /^  [a-z][a-z-]+ +(ring|bidirectional ring|complete graph|any connected graph) / {
        flush(); algo = $1; fam = family; where = ($0 ~ /complete graph/) ? "complete" : "ring"; detector = "no"; next
    }
    /\(and the failure detector.s keys/ { detector = "yes" }
    END { flush() }
' | while read -r algo family where hosts_detector; do
    if [[ -n "${ONLY:-}" && " $ONLY " != *" $algo "* ]]; then
        continue
    fi
    topo=()
    [[ "$where" == complete ]] && topo=(--topology complete)
    # Clocks that agree from the start would make a clock soak trivial: skew them, so that a
    # restarted node comes back off true time and must be brought back within bound.
    [[ "$family" == clock ]] && topo+=(--clock-skew random:100,50)
    variants=(plain)
    [[ "$family" == mutex ]] && variants+=(fencing)
    [[ "$family" == election ]] && variants+=(majority)
    [[ "$family" == mutex && "$hosts_detector" == yes ]] && variants+=(detector)
    for variant in "${variants[@]}"; do
        if [[ -n "${VARIANTS:-}" && " $VARIANTS " != *" $variant "* ]]; then
            continue
        fi
        for seed in $seeds; do
            extra=()
            [[ "$variant" == fencing ]] && extra=(--fencing)
            [[ "$variant" == majority ]] && extra=(--set majority=true)
            # The detector variant is fenced, its detector chosen by the seed (1 fixed, 2 phi,
            # 3 swim, 4 fixed, ...), so a few seeds try all three.
            shown="$variant"
            if [[ "$variant" == detector ]]; then
                detectors=(swim fixed phi)
                shown="detector=${detectors[$((seed % 3))]}"
                extra=(--fencing --set "$shown")
            fi
            out="$logs/$algo-$variant-$seed.out"
            status=0
            # shellcheck disable=SC2086 # EXTRA is a list of arguments, split on purpose
            "$bin" chaos "$nodes" --algo "$algo" "${topo[@]}" "${extra[@]}" ${EXTRA:-} --duration "$secs" --seed "$seed" \
                --logs "$logs/$algo-$variant-$seed" </dev/null >"$out" 2>&1 || status=$?
            faults=$(grep -c '^chaos: \(paused\|killed\|partition\|cut\|loss\|delay\)' "$out" || true)
            verdict=$(grep -o 'chaos: \(passed\|FAILED\)' "$out" | tail -1 | cut -d' ' -f2 || true)
            failed=$(grep '^  FAILED: ' "$out" | sed 's/^  FAILED: //; s/|/\\|/g' | cut -c1-140 | paste -sd ';' - || true)
            fig=$(grep -m1 '^  figures: ' "$out" || true)
            before=- after=- stall=- viol=- stale=-
            if [[ -n "$fig" ]]; then
                before=$(sed -n 's/.*entries\/s \([0-9.-]*\) before.*/\1/p' <<<"$fig")
                after=$(sed -n 's/.*, \([0-9.-]*\) after the last.*/\1/p' <<<"$fig")
                stall=$(sed -n 's/.*longest stall \([^;]*\);.*/\1/p' <<<"$fig")
                viol=$(sed -n 's/.*violations \([0-9]*\) at the resource, \([0-9]*\) by the nodes.*, \([0-9]*\) not).*/\1 \/ \2; \3/p' <<<"$fig")
                stale=$(sed -n 's/.*stale tokens rejected \([0-9]*\).*/\1/p' <<<"$fig")
            fi
            printf '| %s | %s | %s | %s | %s | %s | %s (exit %s) | %s | %s | %s | %s | %s | %s |\n' "$algo" "$shown" "$seed" \
                "$family" "$where" "$faults" "${verdict:-none}" "$status" "$before" "$after" "$stall" "$viol" "$stale" "${failed:--}"
        done
    done
done
echo
echo "(each soak: $nodes nodes, $secs s, seeds $seeds${EXTRA:+, with $EXTRA}; outputs in $logs)"
