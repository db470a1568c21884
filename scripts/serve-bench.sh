#!/usr/bin/env bash
# Load benchmark of kvtier serve over HTTP: many concurrent multi-turn chats against a server
# with the cache and one with --no-prefix-cache, one after the other, the device tier too small
# for the working set and the host tier large enough. Prints throughput and TTFT p50/p99 of each
# and their ratios (io.kvtier.bench.ServeLoadBenchmark; docs/PERFORMANCE.md has the figures).
#   scripts/serve-bench.sh                                 32 chats x 4 turns (the defaults)
#   scripts/serve-bench.sh --conversations 64 --turns 5    options go to the benchmark
# Servers' options: SERVE_OPTIONS (default below). Build first: ./mvnw -B -q package -DskipTests
set -euo pipefail

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
jar="$root/modules/bench/target/benchmarks.jar"
if [[ ! -f "$jar" || ! -d "$root/modules/cli/target/lib" ]]; then
  echo "serve-bench: build the jars first: ./mvnw -B -q package -DskipTests" >&2
  exit 2
fi
# 48 device pages of 16 tokens (768 tokens) against ~32 x 210 tokens of conversations; 2048 host
# pages hold them all.
options=${SERVE_OPTIONS:---device-pages 48 --host-pages 2048 --max-running 8 --queue 256}

logs=$(mktemp -d "${TMPDIR:-/tmp}/kvtier-serve-bench-XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$logs"
}
trap cleanup EXIT

start() { # name, extra options: a server in the background, its pid kept for the cleanup
  local name=$1
  shift
  # shellcheck disable=SC2086
  "$root/bin/kvtier" serve --port 0 $options "$@" >"$logs/$name.log" 2>&1 &
  pids+=($!)
}

url_of() { # name: waits for the server's "listening on" line, prints its URL
  local url
  for _ in $(seq 600); do
    url=$(grep -o 'http://[0-9.]*:[0-9]*' "$logs/$1.log" 2>/dev/null | head -1 || true)
    if [[ -n "$url" ]]; then
      echo "$url"
      return
    fi
    sleep 0.1
  done
  echo "serve-bench: the $1 server did not start:" >&2
  cat "$logs/$1.log" >&2
  exit 1
}

start cached
start uncached --no-prefix-cache
cached=$(url_of cached)
uncached=$(url_of uncached)
echo "servers: cache $cached, no cache $uncached ($options)"
"$JAVA_HOME/bin/java" -cp "$jar" io.kvtier.bench.ServeLoadBenchmark \
  --cached "$cached" --uncached "$uncached" "$@"
