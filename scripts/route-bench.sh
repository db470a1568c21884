#!/usr/bin/env bash
# Routing benchmark over HTTP, three ways in one run, each on fresh servers: 4 kvtier serve
# replicas publishing KV events behind `kvtier route --policy prefix`, the same behind
# `--policy round-robin`, and one replica with 4x the memory and batch (the ideal). Each runs a
# multi-turn and a shared-prefix workload (io.kvtier.bench.RouteLoadBenchmark); at the end a
# table of hit rate (cached_tokens / prompt_tokens) and TTFT p50/p99 with the ratios to the
# ideal and to round robin (docs/PERFORMANCE.md has the figures).
#   scripts/route-bench.sh                                    the defaults
#   scripts/route-bench.sh --conversations 16 --requests 64   options go to the benchmark
# Replicas' options: REPLICA_OPTIONS, the ideal's IDEAL_OPTIONS (defaults below); the routers'
# extra options: ROUTE_OPTIONS (for example "--overlap-weight 4"); PHASES picks some of the three
# (default "prefix round-robin ideal").
# Build first: ./mvnw -B -q package -DskipTests
set -euo pipefail

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
bench=route-bench
url_wait=1200 # tenths of a second for a process to listen
# shellcheck source=lib/bench-common.sh
source "$root/scripts/lib/bench-common.sh"
bench_init
# Pages of 16 tokens. A replica holds 64 + 192 = 256 pages; the workloads' working sets are
# ~64 chats x 13 pages and 64 documents x 10 pages: a quarter of either fits one replica, the
# whole does not, and fits the ideal's 4x (256 + 768 pages).
route_options=${ROUTE_OPTIONS:-}
replica_options=${REPLICA_OPTIONS:---device-pages 64 --host-pages 192 --max-running 8 --queue 512}
ideal_options=${IDEAL_OPTIONS:---device-pages 256 --host-pages 768 --max-running 32 --queue 2048}

serve() { # name, options: a replica publishing KV events; sets $replica to its --replica spec
  local name=$1 options=$2 events replay
  events=$(free_port)
  replay=$(free_port)
  # shellcheck disable=SC2086
  KVTIER_JAVA_OPTS="-Dkvtier.events.publisher=zmq -Dkvtier.events.endpoint=tcp://*:$events \
-Dkvtier.events.replay-endpoint=tcp://127.0.0.1:$replay" \
    "$root/bin/kvtier" serve --port 0 $options >"$logs/$name.log" 2>&1 &
  pids+=($!)
  replica="URL_OF_$name,tcp://127.0.0.1:$events,tcp://127.0.0.1:$replay"
}

bench() { # label, URL, benchmark options
  local label=$1 url=$2
  shift 2
  "$JAVA_HOME/bin/java" -cp "$jar" io.kvtier.bench.RouteLoadBenchmark \
    --url "$url" --label "$label" --results "$results" "$@"
}

routed() { # policy, benchmark options: 4 replicas behind kvtier route
  local policy=$1 specs=() args=() spec name
  shift
  for i in 0 1 2 3; do
    serve "$policy-$i" "$replica_options"
    specs+=("$replica")
  done
  for spec in "${specs[@]}"; do
    name=${spec%%,*}
    name=${name#URL_OF_}
    args+=(--replica "$(url_of "$name")${spec#URL_OF_"$name"}")
  done
  "$root/bin/kvtier" route --port 0 --policy "$policy" $route_options "${args[@]}" >"$logs/route-$policy.log" 2>&1 &
  pids+=($!)
  local url
  url=$(url_of "route-$policy")
  echo "route --policy $policy at $url over 4 replicas ($replica_options)"
  bench "$policy" "$url" "$@"
  stop_all
}

for phase in ${PHASES:-prefix round-robin ideal}; do
  case $phase in
    prefix | round-robin) routed "$phase" "$@" ;;
    ideal)
      serve ideal "$ideal_options"
      ideal=$(url_of ideal)
      echo "one replica at $ideal ($ideal_options)"
      bench ideal "$ideal" "$@"
      stop_all
      ;;
    *)
      echo "route-bench: PHASES holds $phase: use prefix, round-robin and ideal" >&2
      exit 2
      ;;
  esac
done
"$JAVA_HOME/bin/java" -cp "$jar" io.kvtier.bench.RouteLoadBenchmark --compare "$results"
