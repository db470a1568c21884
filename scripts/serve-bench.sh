#!/usr/bin/env bash
# Load benchmark of kvtier serve over HTTP: many concurrent multi-turn chats against a server
# with the cache and one with --no-prefix-cache, one after the other, the device tier too small
# for the working set and the host tier large enough. Prints throughput and TTFT p50/p99 of each
# and their ratios (io.kvtier.bench.ServeLoadBenchmark; docs/PERFORMANCE.md has the figures).
#   scripts/serve-bench.sh                                 32 chats x 4 turns (the defaults)
#   scripts/serve-bench.sh --conversations 64 --turns 5    options go to the benchmark
# Servers' options: SERVE_OPTIONS (default below). Build first: ./mvnw -B -q package -DskipTests
# SERVE_MEMORY=1 also reports each server's resident memory (/proc/PID/status: VmRSS, RssAnon,
# RssFile every second during the run, once more after it, and the peak VmHWM) and, for a
# --model server, checks it against the bound of docs/PERFORMANCE.md: the model file + the
# pools + 300 MB (the pools' size from the server's startup line: pages x layers x K and V x
# KV heads x head size x 4 bytes, 2 with --kv-type f16, x tokens a page).
set -euo pipefail

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
bench=serve-bench
# shellcheck source=lib/bench-common.sh
source "$root/scripts/lib/bench-common.sh"
bench_jars
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

declare -A pid_of=()
start() { # name, extra options: a server in the background, its pid kept for the cleanup
  local name=$1
  shift
  # shellcheck disable=SC2086
  "$root/bin/kvtier" serve --port 0 $options "$@" >"$logs/$name.log" 2>&1 &
  pids+=($!)
  pid_of[$name]=$!
}

start cached
start uncached --no-prefix-cache
cached=$(url_of cached)
uncached=$(url_of uncached)
echo "servers: cache $cached, no cache $uncached ($options)"

memory() { # pid: "VmRSS RssAnon RssFile VmHWM" in kB, or nothing once the process is gone
  awk '$1 == "VmRSS:" {r = $2} $1 == "RssAnon:" {a = $2} $1 == "RssFile:" {f = $2}
    $1 == "VmHWM:" {h = $2} END {if (r != "") print r, a, f, h}' "/proc/$1/status" 2>/dev/null ||
    true
}

samplers=()
if [[ "${SERVE_MEMORY:-0}" == "1" ]]; then
  for name in cached uncached; do
    : >"$logs/$name.memory"
    (
      while sample=$(memory "${pid_of[$name]}") && [[ -n "$sample" ]]; do
        echo "$sample" >>"$logs/$name.memory"
        sleep 1
      done
    ) &
    samplers+=($!)
  done
fi

"$JAVA_HOME/bin/java" -cp "$jar" io.kvtier.bench.ServeLoadBenchmark \
  --cached "$cached" --uncached "$uncached" "$@"

# The model file's bytes (--model in the servers' options), or 0 without one.
model_bytes() {
  local file
  # shellcheck disable=SC2086
  file=$(set -- $options && while (($#)); do [[ $1 == --model ]] && { echo "$2"; break; }; shift; done)
  if [[ -n "$file" && -f "$file" ]]; then stat -c %s "$file"; else echo 0; fi
}

# The pools' bytes from a server's startup line ("30 layers, ... 9/3 heads of 64, ... device 64
# pages, host 1024 pages of 16 tokens"): K and V of every layer's KV heads, 4 bytes a value (2
# where the line says "F16 K/V": --kv-type f16); 0 if absent.
pool_bytes() {
  local value=4
  if grep -q "F16 K/V" "$1"; then value=2; fi
  sed -n 's/.* \([0-9]*\) layers,.* [0-9]*\/\([0-9]*\) heads of \([0-9]*\),.*device \([0-9]*\) pages, host \([0-9]*\) pages of \([0-9]*\) tokens.*/\1 \2 \3 \4 \5 \6/p' \
    "$1" | head -1 | awk -v b="$value" '{print ($4 + $5) * $1 * 2 * $2 * $3 * b * $6} END {if (NR == 0) print 0}'
}

if [[ "${SERVE_MEMORY:-0}" == "1" ]]; then
  kill "${samplers[@]}" 2>/dev/null || true
  wait "${samplers[@]}" 2>/dev/null || true
  sleep 5 # after the run: what the servers keep once idle
  file=$(model_bytes)
  for name in cached uncached; do
    after=$(memory "${pid_of[$name]}")
    pools=$(pool_bytes "$logs/$name.log")
    # MB = 10^6 bytes, as the model file's 542 MB; /proc's kB are KiB.
    awk -v name="$name" -v pid="${pid_of[$name]}" -v after="$after" -v file="$file" \
      -v pools="$pools" '
      function mb(kb) { return kb * 1024 / 1e6 }
      $1 > rss { rss = $1; anon = $2; mapped = $3 }
      { hwm = $4 }
      END {
        split(after, a, " ")
        hwm = a[4] > hwm ? a[4] : hwm
        printf "memory, %s server (pid %s): during the run VmRSS max %.0f MB (RssAnon %.0f,"\
          " RssFile %.0f), peak VmHWM %.0f MB; after it VmRSS %.0f MB (RssAnon %.0f, RssFile"\
          " %.0f)\n", name, pid, mb(rss), mb(anon), mb(mapped), mb(hwm), mb(a[1]), mb(a[2]),
          mb(a[3])
        if (file > 0 && pools > 0) {
          bound = (file + pools) / 1e6 + 300
          printf "  bound: model file %.0f MB + pools %.0f MB + 300 MB = %.0f MB: peak %.0f MB,"\
            " %s\n", file / 1e6, pools / 1e6, bound, mb(hwm),
            mb(hwm) <= bound ? "met" : sprintf("over by %.0f MB", mb(hwm) - bound)
        }
      }' "$logs/$name.memory"
  done
fi
