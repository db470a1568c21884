#!/usr/bin/env bash
# Chaos under load (docs/PERFORMANCE.md, "Chaos soak"): kvtier serve on 2 ranks answers concurrent
# multi-turn conversations for DURATION seconds while copies fail (sim.failure-probability), host
# pages flip at rest (sim.flip-probability), the L3 store drops pages, fails reads and throws
# (faulty.probability, faulty.throw-probability), has bits of its stored pages flipped, which its
# CRC32C must catch (faulty.flip-probability), and is slow (faulty.slow-delay): the testing store `faulty` of
# modules/asserting around the memory store. Every answer is compared, token id by token id,
# with a reference server's (2 ranks, --no-prefix-cache, no faults; greedy decoding). Prints the
# requests, the faults the chaos server saw, wrong answers, failed requests and their reasons,
# TTFT p50/p99, and the chaos server's resident memory and open files over the run.
# Exit status 1 on any wrong answer or failed request (scripts/chaos_soak.py).
#   scripts/chaos-soak.sh                        # 60 s, 8 clients
#   DURATION=600 CLIENTS=8 scripts/chaos-soak.sh # the 10-minute soak of docs/PERFORMANCE.md
#   FAILURE=0.05 FLIP=0.08 L3_FAULTS=0.05 L3_THROWS=0.01 L3_FLIP=0.05 L3_SLOW=2ms SEED=7 scripts/chaos-soak.sh
# CHAOS_OPTIONS replace the chaos server's pool and L3 options (default below); SOAK_JSON=FILE
# also writes the summary, with the memory series, as JSON. Runs bin/kvtier from the repository
# (build it first: ./mvnw -B -q package -DskipTests).
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
duration=${DURATION:-60}
clients=${CLIENTS:-8}
failure=${FAILURE:-0.05}
flip=${FLIP:-0.08}
l3_faults=${L3_FAULTS:-0.05}
l3_throws=${L3_THROWS:-0.01}
l3_flip=${L3_FLIP:-0.05}
l3_slow=${L3_SLOW:-2ms}
seed=${SEED:-7}
# 2 ranks; 64 device pages of 16 tokens (4 running conversations of up to 256 tokens) and 96 host
# pages under ~24 replayed conversations of up to 256 tokens: pages go down to the host tier and
# on to L3, and come back from both; 16 MiB of L3 per rank (~2,000 pages) fill within minutes and
# then evict, so that the server's memory should stay flat. A small heap, so that a leak shows
# within the run.
chaos_options=${CHAOS_OPTIONS:---device-pages 64 --host-pages 96 --max-running 4 --l3-prefetch-threshold 16 --l3-mib 16}
heap=${SOAK_HEAP:--Xmx384m}

if [[ ! -d "$root/modules/cli/target/lib" ]]; then
  echo "chaos-soak: build the jars first: ./mvnw -B -q package -DskipTests" >&2
  exit 2
fi
logs=$(mktemp -d "${TMPDIR:-/tmp}/kvtier-chaos-soak-XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$logs"
}
trap cleanup EXIT

cat >"$logs/chaos.properties" <<EOF
sim.failure-probability=$failure
sim.flip-probability=$flip
sim.seed=$seed
faulty.delegate=memory
faulty.probability=$l3_faults
faulty.throw-probability=$l3_throws
faulty.flip-probability=$l3_flip
faulty.slow-delay=$l3_slow
faulty.seed=$seed
EOF

declare -A pid_of=()
start() { # name, options: a server in the background, its pid kept for the cleanup
  local name=$1
  shift
  KVTIER_JAVA_OPTS="$heap ${KVTIER_JAVA_OPTS:-}" "$root/bin/kvtier" serve --port 0 --ranks 2 \
    --queue 256 "$@" >"$logs/$name.log" 2>&1 &
  pids+=($!)
  pid_of[$name]=$!
}

url_of() { # name: waits for the server's "listening on" line, prints its URL
  local url
  for _ in $(seq 1200); do
    url=$(grep -o 'http://[0-9.]*:[0-9]*' "$logs/$1.log" 2>/dev/null | head -1 || true)
    if [[ -n "$url" ]]; then
      echo "$url"
      return
    fi
    if ! kill -0 "${pid_of[$1]}" 2>/dev/null; then
      break
    fi
    sleep 0.1
  done
  echo "chaos-soak: the $1 server did not start:" >&2
  cat "$logs/$1.log" >&2
  exit 1
}

start reference --no-prefix-cache --max-running 4
# shellcheck disable=SC2086
start chaos $chaos_options --l3 faulty --config "$logs/chaos.properties"
reference=$(url_of reference)
chaos=$(url_of chaos)
# bin/kvtier execs java: the server's pid is the launcher's.
echo "chaos-soak: reference $reference (2 ranks, no cache), chaos $chaos (2 ranks, $chaos_options;" \
  "copies fail $failure, host flips $flip, L3 faults $l3_faults, L3 throws $l3_throws, L3 flips $l3_flip," \
  "L3 delay $l3_slow, seed $seed)," \
  "$clients clients for $duration s"

status=0
python3 "$root/scripts/chaos_soak.py" --chaos "$chaos" --reference "$reference" \
  --pid "${pid_of[chaos]}" --duration "$duration" --clients "$clients" --seed "$seed" \
  ${SOAK_JSON:+--json "$SOAK_JSON"} || status=$?

# The chaos server's log beyond its startup line: its messages by kind (java.util.logging writes
# a line of time and source, then LEVEL: message; numbers become N).
if kill -0 "${pid_of[chaos]}" 2>/dev/null; then
  echo "chaos server log: $(grep -c '^[A-Z]*: ' "$logs/chaos.log" || true) messages"
  grep '^[A-Z]*: ' "$logs/chaos.log" | grep -v '^WARNING: Using incubator' |
    sed -E 's/[0-9]+/N/g' | cut -c1-200 | sort | uniq -c | sort -rn | head -12 || true
else
  echo "chaos-soak: FAILED: the chaos server died during the run:" >&2
  tail -30 "$logs/chaos.log" >&2
  status=1
fi
exit "$status"
