#!/usr/bin/env bash
# Writes bin/node-order.txt: the functions node processes run, in the order they first ran,
# recorded with one uprobe per function of the release binary while short runs of every
# algorithm (and a chaos soak: pauses, kills, restarts) go by. bin/build.rs has the linker put
# them first, side by side, so that a node maps little of the binary's code. Run it after
# changes to the node's code; a stale list only costs memory (what it does not name keeps its
# usual place). Needs root and tracefs (/sys/kernel/tracing). Takes about ten minutes here
# (with the build; removing 3,000 probes alone takes a few).
set -euo pipefail
cd "$(dirname "$0")/.."
T=/sys/kernel/tracing
GROUP=coordlab_order
if [ ! -w "$T/uprobe_events" ]; then
    echo "order-code.sh: needs root and tracefs: cannot write $T/uprobe_events" >&2
    exit 1
fi
cargo build --release
BIN="$(pwd)/${CARGO_TARGET_DIR:-target}/release/coordlab"
WORK="$(mktemp -d)"
cleanup() {
    echo 0 >"$T/events/$GROUP/enable" 2>/dev/null || true
    [ -n "${READER:-}" ] && kill "$READER" 2>/dev/null || true
    # A probe still in use refuses to go: try again.
    for _ in 1 2 3; do
        grep "^p:$GROUP/" "$T/uprobe_events" | sed 's/^p:/-:/; s/ .*//' | while read -r rm; do
            echo "$rm" >>"$T/uprobe_events"
        done 2>/dev/null || true
        grep -q "^p:$GROUP/" "$T/uprobe_events" || break
        sleep 1
    done
    if grep -q "^p:$GROUP/" "$T/uprobe_events"; then
        echo "order-code.sh: some probes remain in $T/uprobe_events (group $GROUP)" >&2
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# One probe per function: its file offset is its address less its LOAD segment's, plus the
# segment's offset in the file.
readelf -lW "$BIN" | awk '$1 == "LOAD" { print $2, $3, $5 }' >"$WORK/loads"
nm --defined-only "$BIN" | awk '$2 ~ /^[tTwW]$/ { print $1, $3 }' | sort -u -k1,1 >"$WORK/syms"
awk -v bin="$BIN" -v group="$GROUP" '
    function hex(s,    i, v) {
        sub(/^0x/, "", s); v = 0
        for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
        return v
    }
    NR == FNR { off[NR] = hex($1); va[NR] = hex($2); size[NR] = hex($3); n = NR; next }
    {
        a = hex($1)
        for (i = 1; i <= n; i++) if (a >= va[i] && a < va[i] + size[i]) {
            k++; printf "p:%s/f%d %s:0x%x\n", group, k, bin, a - va[i] + off[i]
            printf "f%d %s\n", k, $2 > "'"$WORK/names"'"
            break
        }
    }' "$WORK/loads" "$WORK/syms" >"$WORK/probes"
while read -r probe; do echo "$probe" >>"$T/uprobe_events"; done <"$WORK/probes"
echo "order-code.sh: $(wc -l <"$WORK/probes") functions probed" >&2
# Only node processes (and the zygote that forks them) count: not the launcher's own code.
echo 'comm ~ "coordlab-*"' >"$T/events/$GROUP/filter"
echo 16384 >"$T/buffer_size_kb"
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^f[0-9]+:$/) { e = substr($i, 1, length($i) - 1); if (!seen[e]++) { print e; fflush() } break } }' \
    "$T/trace_pipe" >"$WORK/hits" &
READER=$!
echo 1 >"$T/events/$GROUP/enable"

run() {
    echo "order-code.sh: coordlab $*" >&2
    "$BIN" "$@" --logs "$WORK/logs" </dev/null >/dev/null 2>&1 || true
}
for algo in chang-roberts ring-list franklin; do run ring 5 --algo "$algo" --until elected; done
run ring 5 --algo anon-ring --duration 1
run ring 70 --until elected
run ring 5 --set majority=true --until elected
for algo in bully yoyo echo; do run mesh 6 --algo "$algo" --until elected; done
run ring 5 --algo ring-probe --initiators 5 --set laps=20 --until done
for algo in central ricart-agrawala lamport quorum maekawa; do
    run mesh 4 --algo "$algo" --requests 5 --until done
done
run ring 4 --algo token-ring --requests 5 --until done
run mesh 4 --algo central --fencing --requests 5 --until done
run mesh 4 --algo quorum --durable --requests 5 --until done
for algo in cristian berkeley; do run mesh 4 --algo "$algo" --set period_ms=100 --duration 1.5; done
run mesh 4 --algo bank --duration 2
run chaos 6 --duration 8 --seed 1
sleep 1
echo 0 >"$T/events/$GROUP/enable"
sleep 0.5
kill "$READER" 2>/dev/null || true
READER=
awk 'NR == FNR { name[$1] = $2; next } ($1 in name) { print name[$1] }' "$WORK/names" "$WORK/hits" >bin/node-order.txt
echo "order-code.sh: wrote bin/node-order.txt ($(wc -l <bin/node-order.txt) functions); rebuild: cargo build --release" >&2
