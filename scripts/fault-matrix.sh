#!/usr/bin/env bash
# Cache faults across the rank protocol's settings (docs/PERFORMANCE.md, "Cache faults"): one
# kvtier simulate run per combination of ranks, L3 store, write policy and layer mix, each with
# copies failing (--failure-probability) and host pages flipping at rest (--flip-probability).
# Every run must pass its checks, and the table says what the faults cost: requests that ended
# (must be 0 under --on-load-failure recompute), requests recomputed, flipped host blocks caught
# by their CRC32C, and KV mismatches (pages wrong after a restore; must be 0).
#   scripts/fault-matrix.sh                              # 3 x 3 x 2 x 3 = 54 runs
#   RANKS="2" L3S="memory" POLICIES="write_through" MIXES="full" TICKS=200 scripts/fault-matrix.sh
#   FAILURE=0.05 FLIP=0.1 SEED=7 scripts/fault-matrix.sh
# Runs bin/kvtier from the repository (build it first: ./mvnw -B -q package -DskipTests).
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
ranks=${RANKS:-2 4 8}
l3s=${L3S:-none memory file}
policies=${POLICIES:-write_through write_back}
mixes=${MIXES:-full full,recurrent full,swa:64}
failure=${FAILURE:-0.05}
flip=${FLIP:-0.1}
seed=${SEED:-7}
ticks=${TICKS:-400}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| ranks | L3 | write policy | layer mix | ended | recomputed | flips caught | KV mismatches |"
echo "|---:|---|---|---|---:|---:|---:|---:|"
failed=0
for r in $ranks; do for l3 in $l3s; do for wp in $policies; do for mix in $mixes; do
  args=(--ranks "$r" --seed "$seed" --l3 "$l3" --write-policy "$wp" --failure-probability "$failure"
        --flip-probability "$flip" --device-pages 96 --host-ratio 2 --page-size 16 --ticks "$ticks")
  case "$mix" in
    full) ;;
    *swa*) args+=(--layer-mix "$mix" --swa-cache windows) ;;
    *) args+=(--layer-mix "$mix") ;;
  esac
  if "$root/bin/kvtier" simulate "${args[@]}" --json "$tmp/r.json" > "$tmp/log" 2>&1; then
    python3 - "$r" "$l3" "$wp" "$mix" "$tmp/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[5]))
print("| %s | %s | %s | %s | %d | %d | %d | %d |" % (sys.argv[1], sys.argv[2], sys.argv[3],
      sys.argv[4], d["loadFailureAborts"], d["loadFailureRecomputes"],
      d["hostChecksumMismatches"], d["kvMismatches"]))
PY
  else
    echo "| $r | $l3 | $wp | $mix | FAILED: $(tail -1 "$tmp/log") | | | |"
    failed=1
  fi
done; done; done; done
exit $failed
