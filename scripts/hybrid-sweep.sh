#!/usr/bin/env bash
# Matched and usable hit rates per layer mix and SWA cache mode, the snapshot interval swept
# (docs/PERFORMANCE.md, "Hybrid layer mixes"; docs/HYBRID.md §4, §8). Prints two Markdown tables:
#   1. kvtier simulate (4 ranks, 16-token pages, DEVICE_PAGES device pages per rank, a host tier
#      x2, write-through, LRU) on its default multi-turn workload, and on shared system prompts of
#      184 tokens (11.5 pages: a hit ends at page 11, a position only interval snapshots can
#      cover) prefilled in one chunk (--chunk 512, so that no chunk end takes a snapshot there),
#      one run per workload, row and interval;
#   2. kvtier replay of a Mooncake trace (512-token pages, a device of DEVICE tokens, a host tier
#      x4), one sweep of the intervals per row, with the unbounded baseline beside it.
#
# The rows: the mixes full, full,swa:64, full,recurrent, full,swa:64,recurrent with --swa-cache
# pages (SWA layers keep every page); full,swa:64 and full,swa:64,recurrent with --swa-cache
# windows (pages hold the full-attention KV only, the SWA windows go into the snapshots, so the
# interval is swept for them too) at the same page count; and the same two "at equal device
# bytes". A page of the windows mode holds pageLayers(true) = max(1, #full) layer blocks instead
# of pageLayers(false) = one per layer, so the same bytes hold F = pageLayers(false) /
# pageLayers(true) times as many pages (2 for full,swa:64, 3 for full,swa:64,recurrent): the
# equal-bytes rows give the windows mode F times the device pages (and, through the host ratio,
# the host pages; in the replay F times DEVICE tokens). Giving windows more pages rather than
# pages mode fewer keeps every pages-mode row the run it was before windows existed, comparable
# with the earlier tables, and it is the question a deployment asks: what the same GPU memory
# holds. The simulator's pools keep their 2-block pattern layout in both modes (HYBRID.md §8):
# the saving is modelled by the page count, not by smaller slots.
#
#   scripts/hybrid-sweep.sh                      # table 2 on ../shared/traces/mooncake-synthetic.jsonl
#                                                # (the Mooncake synthetic trace, not in the
#                                                # repository); without it table 2 is left out
#   TRACE=path.jsonl DEVICE=2M scripts/hybrid-sweep.sh
#   INTERVALS=1,8 SIM_OPTS="--seed 3" scripts/hybrid-sweep.sh   # options of every simulate run
#   WORKLOADS="multiturn|;doc-qa|--chunk 256" scripts/hybrid-sweep.sh   # SPEC|OPTIONS;...
#   DEVICE_PAGES=256 scripts/hybrid-sweep.sh     # device pages per rank of the simulate runs
#
# Runs bin/kvtier from the project root (build it first: ./mvnw -B -q package -DskipTests).
# Every simulate run must pass its checks (digests, leaks, KV and snapshot mismatches): the
# script stops at the first that does not.
set -euo pipefail
[ -x bin/kvtier ] || { echo "run from the project root (no bin/kvtier here)" >&2; exit 2; }
intervals=${INTERVALS:-1,2,4,8,16,32}
device=${DEVICE:-2M}
device_pages=${DEVICE_PAGES:-192}
sim_opts=${SIM_OPTS:-}
IFS=';' read -r -a workloads <<< "${WORKLOADS:-multiturn|;shared-prefix:system=184|--chunk 512}"
if [ -z "${TRACE:-}" ]; then
  TRACE=../shared/traces/mooncake-synthetic.jsonl
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# MIX|SWA CACHE|BYTES: same = the same page count as pages mode, equal = equal device bytes
rows=(full\|pages\|same full,swa:64\|pages\|same full,recurrent\|pages\|same
      full,swa:64,recurrent\|pages\|same full,swa:64\|windows\|same
      full,swa:64,recurrent\|windows\|same full,swa:64\|windows\|equal
      full,swa:64,recurrent\|windows\|equal)

# F = pageLayers(false) / pageLayers(true) of a mix (kind or kind*N elements), 1 for pages mode.
factor() {
  python3 - "$1" "$2" <<'PY'
import sys
mix, cache = sys.argv[1], sys.argv[2]
layers = full = 0
for e in mix.split(","):
    kind, _, n = e.partition("*")
    n = int(n or 1)
    layers += n
    full += n if kind == "full" else 0
print(1 if cache == "pages" else layers // max(1, full) if layers % max(1, full) == 0
      else f"{layers / max(1, full):g}")
PY
}
# A token count (2M, 500K, 1000) times F, in the replay's syntax.
scaled() {
  python3 - "$1" "$2" <<'PY'
import re, sys
m = re.fullmatch(r"([0-9.]+)([kKmMgG]?)", sys.argv[1])
print(f"{float(m.group(1)) * float(sys.argv[2]):g}{m.group(2)}")
PY
}

for entry in "${workloads[@]}"; do
workload=${entry%%|*}
opts="${entry#*|}${sim_opts:+ $sim_opts}"
opts=${opts# }
echo "### kvtier simulate --workload $workload${opts:+ $opts}"
echo
echo "| mix | swa cache | device pages | interval (pages) | prompt tokens | matched | usable | matched rate | usable rate | usable / matched | resumes verified |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for row in "${rows[@]}"; do
  IFS='|' read -r mix cache bytes <<< "$row"
  f=1; [ "$bytes" = same ] || f=$(factor "$mix" "$cache")
  pages=$((device_pages * f))
  if [[ $mix == *recurrent* || $cache == windows ]]; then ks=${intervals//,/ }; else ks=-; fi
  for k in $ks; do
    args=(simulate --workload "$workload" --device-pages "$pages" --json "$tmp/s.json")
    [ "$mix" = full ] || args+=(--layer-mix "$mix")
    [ "$cache" = pages ] || args+=(--swa-cache "$cache")
    [ "$k" = - ] || args+=(--snapshot-interval "$k")
    # shellcheck disable=SC2206
    args+=($opts)
    if ! bin/kvtier "${args[@]}" > "$tmp/s.log" 2>&1; then
      echo "FAILED: bin/kvtier ${args[*]}" >&2; tail -3 "$tmp/s.log" >&2; exit 1
    fi
    python3 - "$tmp/s.json" "$mix" "$k" "$cache" "$pages" "$bytes" <<'PY2'
import json, sys
d = json.load(open(sys.argv[1]))
m = sum(d["hitTokens"].values()); u = d["usableTokens"]; p = d["promptTokens"]
mark = " (equal bytes)" if sys.argv[6] == "equal" else ""
slots = f", {d['snapshotSlots']} slot(s)" if sys.argv[4] == "windows" else ""
print(f"| `{sys.argv[2]}` | {sys.argv[4]}{slots}{mark} | {int(sys.argv[5]):,} | {sys.argv[3]} "
      f"| {p:,} | {m:,} | {u:,} | {m / p:.1%} | {u / p:.1%} "
      f"| {d['usableOfMatched']:.3f} | {d['snapshotsVerified']:,} |")
PY2
  done
done
echo
done
if [ ! -f "$TRACE" ]; then
  echo "(no replay table: no trace $TRACE; download FAST25-release/traces/synthetic_trace.jsonl"
  echo "from https://github.com/kvcache-ai/Mooncake, or give TRACE=path.jsonl)"
  exit 0
fi
echo "### kvtier replay ($(basename "$TRACE"), 512-token pages, device $device tokens, host x4)"
echo
echo "| mix | swa cache | device tokens | interval (pages) | matched rate | usable rate | usable / matched | unbounded: matched | usable | usable / matched |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for row in "${rows[@]}"; do
  IFS='|' read -r mix cache bytes <<< "$row"
  f=1; [ "$bytes" = same ] || f=$(factor "$mix" "$cache")
  dev=$device; [ "$f" = 1 ] || dev=$(scaled "$device" "$f")
  args=(replay --workload "mooncake:$TRACE" --page-size 512 --device-tokens "$dev"
        --host-ratio 4 --json "$tmp/r.json")
  [ "$mix" = full ] || args+=(--layer-mix "$mix")
  [ "$cache" = pages ] || args+=(--swa-cache "$cache")
  [[ $mix != *recurrent* && $cache != windows ]] || args+=(--snapshot-interval "$intervals")
  bin/kvtier "${args[@]}" > "$tmp/r.log" 2>&1 || { cat "$tmp/r.log" >&2; exit 1; }
  python3 - "$tmp/r.json" "$mix" "$cache" "$dev" "$bytes" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
mix, cache = sys.argv[2], sys.argv[3]
snapshots = "recurrent" in mix or cache == "windows"
mark = " (equal bytes)" if sys.argv[5] == "equal" else ""
bounds = {b["snapshotIntervalPages"]: b for b in d["baselines"] if b["kind"] == "unbounded"}
for c in d["configurations"]:
    k = c["snapshotIntervalPages"]
    b = bounds[k]
    slots = f", {c['snapshotSlots']} slot(s)" if cache == "windows" else ""
    print(f"| `{mix}` | {cache}{slots}{mark} | {sys.argv[4]} | {k if snapshots else '-'} "
          f"| {c['hitRate']['total']:.1%} "
          f"| {c['usableHitRate']['total']:.1%} | {c['usableOfMatched']:.3f} "
          f"| {b['hitRate']['total']:.1%} | {b['usableHitRate']['total']:.1%} "
          f"| {b['usableOfMatched']:.3f} |")
PY
done
