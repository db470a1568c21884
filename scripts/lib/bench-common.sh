# shellcheck shell=bash
# What the benchmark scripts share (sourced by scripts/route-bench.sh, scripts/pd-bench.sh and
# scripts/serve-bench.sh, which set $root, the checkout, and $bench, their name, first):
#   bench_jars   the jars' check: sets $jar, the benchmarks' jar, or exits 2 saying to build
#   bench_init   bench_jars, a log directory ($logs, $results), and on exit every process in
#                $pids stopped and $logs removed
#   stop_all     stops the processes in $pids and waits for them
#   free_port    a free TCP port of 127.0.0.1
#   url_of NAME  waits (up to $url_wait tenths of a second, 600 unless set) for the "listening
#                on" line of $logs/NAME.log and prints its URL; exits 1 with the log if none

bench_jars() {
  jar="$root/modules/bench/target/benchmarks.jar"
  if [[ ! -f "$jar" || ! -d "$root/modules/cli/target/lib" ]]; then
    echo "$bench: build the jars first: ./mvnw -B -q package -DskipTests" >&2
    exit 2
  fi
}

bench_init() {
  bench_jars
  logs=$(mktemp -d "${TMPDIR:-/tmp}/kvtier-$bench-XXXXXX")
  results="$logs/results.txt"
  pids=()
  trap 'stop_all; rm -rf "$logs"' EXIT
}

stop_all() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  pids=()
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

url_of() {
  local url
  for _ in $(seq "${url_wait:-600}"); do
    url=$(grep -o 'http://[0-9.]*:[0-9]*' "$logs/$1.log" 2>/dev/null | head -1 || true)
    if [[ -n "$url" ]]; then
      echo "$url"
      return
    fi
    sleep 0.1
  done
  echo "$bench: $1 did not start:" >&2
  cat "$logs/$1.log" >&2
  exit 1
}
