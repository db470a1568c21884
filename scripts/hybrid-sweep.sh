#!/usr/bin/env bash
# Matched and usable hit rates per layer mix, the recurrent-state snapshot interval swept
# (docs/PERFORMANCE.md, "Hybrid layer mixes"; docs/HYBRID.md §8). Prints two Markdown tables:
#   1. kvtier simulate (4 ranks, 16-token pages, 192 device pages per rank, a host tier x2,
#      write-through, LRU) on its default multi-turn workload, and on shared system prompts of
#      184 tokens (11.5 pages: a hit ends at page 11, a position only interval snapshots can
#      cover) prefilled in one chunk (--chunk 512, so that no chunk end takes a snapshot there),
#      one run per workload, mix and interval;
#   2. kvtier replay of a Mooncake trace (512-token pages, a device of DEVICE tokens, a host tier
#      x4), one sweep of the intervals per mix, with the unbounded baseline beside it.
#
#   scripts/hybrid-sweep.sh                      # the sample trace of ../shared/traces if there,
#                                                # else traces/mooncake-synthetic-1000.jsonl
#   TRACE=path.jsonl DEVICE=2M scripts/hybrid-sweep.sh
#   INTERVALS=1,8 SIM_OPTS="--seed 3" scripts/hybrid-sweep.sh   # options of every simulate run
#   WORKLOADS="multiturn|;doc-qa|--chunk 256" scripts/hybrid-sweep.sh   # SPEC|OPTIONS;...
#
# Runs bin/kvtier from the project root (build it first: ./mvnw -B -q package -DskipTests).
# Every simulate run must pass its checks (digests, leaks, KV and snapshot mismatches): the
# script stops at the first that does not.
set -euo pipefail
[ -x bin/kvtier ] || { echo "run from the project root (no bin/kvtier here)" >&2; exit 2; }
intervals=${INTERVALS:-1,2,4,8,16,32}
device=${DEVICE:-2M}
sim_opts=${SIM_OPTS:-}
IFS=';' read -r -a workloads <<< "${WORKLOADS:-multiturn|;shared-prefix:system=184|--chunk 512}"
if [ -z "${TRACE:-}" ]; then
  TRACE=../shared/traces/mooncake-synthetic.jsonl
  [ -f "$TRACE" ] || TRACE=traces/mooncake-synthetic-1000.jsonl
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mixes=(full full,swa:64 full,recurrent full,swa:64,recurrent)

for entry in "${workloads[@]}"; do
workload=${entry%%|*}
opts="${entry#*|}${sim_opts:+ $sim_opts}"
opts=${opts# }
echo "### kvtier simulate --workload $workload${opts:+ $opts}"
echo
echo "| mix | interval (pages) | prompt tokens | matched | usable | matched rate | usable rate | usable / matched | resumes verified |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for mix in "${mixes[@]}"; do
  if [[ $mix == *recurrent* ]]; then ks=${intervals//,/ }; else ks=-; fi
  for k in $ks; do
    args=(simulate --workload "$workload" --json "$tmp/s.json")
    [ "$mix" = full ] || args+=(--layer-mix "$mix")
    [ "$k" = - ] || args+=(--snapshot-interval "$k")
    # shellcheck disable=SC2206
    args+=($opts)
    if ! bin/kvtier "${args[@]}" > "$tmp/s.log" 2>&1; then
      echo "FAILED: bin/kvtier ${args[*]}" >&2; tail -3 "$tmp/s.log" >&2; exit 1
    fi
    python3 - "$tmp/s.json" "$mix" "$k" <<'PY2'
import json, sys
d = json.load(open(sys.argv[1]))
m = sum(d["hitTokens"].values()); u = d["usableTokens"]; p = d["promptTokens"]
print(f"| `{sys.argv[2]}` | {sys.argv[3]} | {p:,} | {m:,} | {u:,} | {m / p:.1%} | {u / p:.1%} "
      f"| {d['usableOfMatched']:.3f} | {d['snapshotsVerified']:,} |")
PY2
  done
done
echo
done
echo "### kvtier replay ($(basename "$TRACE"), 512-token pages, device $device tokens, host x4)"
echo
echo "| mix | interval (pages) | matched rate | usable rate | usable / matched | unbounded: matched | usable | usable / matched |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for mix in "${mixes[@]}"; do
  args=(replay --workload "mooncake:$TRACE" --page-size 512 --device-tokens "$device"
        --host-ratio 4 --json "$tmp/r.json")
  [ "$mix" = full ] || args+=(--layer-mix "$mix")
  [[ $mix != *recurrent* ]] || args+=(--snapshot-interval "$intervals")
  bin/kvtier "${args[@]}" > "$tmp/r.log" 2>&1 || { cat "$tmp/r.log" >&2; exit 1; }
  python3 - "$tmp/r.json" "$mix" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
recurrent = "recurrent" in sys.argv[2]
bounds = {b["snapshotIntervalPages"]: b for b in d["baselines"] if b["kind"] == "unbounded"}
for c in d["configurations"]:
    k = c["snapshotIntervalPages"]
    b = bounds[k]
    print(f"| `{sys.argv[2]}` | {k if recurrent else '-'} | {c['hitRate']['total']:.1%} "
          f"| {c['usableHitRate']['total']:.1%} | {c['usableOfMatched']:.3f} "
          f"| {b['hitRate']['total']:.1%} | {b['usableHitRate']['total']:.1%} "
          f"| {b['usableOfMatched']:.3f} |")
PY
done
