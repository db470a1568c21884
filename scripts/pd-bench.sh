#!/usr/bin/env bash
# Prefill/decode disaggregation benchmark (issue 34) over HTTP, two setups in one run, each on
# fresh processes behind `kvtier route`: 2 unified replicas (`--replica`), then 1 `--role prefill`
# and 1 `--role decode` replica over one `--l3 file` directory (`--prefill`/`--decode`). Both get
# the same mixed load (io.kvtier.bench.PdLoadBenchmark: long prompts with short answers beside
# short prompts with long answers); at the end a table of throughput, TTFT p50/p99 of each kind and
# inter-token latency p50/p99, and, from the P/D replicas' and router's /metrics, the transfer
# cost per token beside the prefill cost per token, for one long request alone (sent first, also
# the warm-up of each setup) and for the mixed load (docs/PERFORMANCE.md has the figures).
#   scripts/pd-bench.sh                                      the tiny model, the defaults
#   scripts/pd-bench.sh --long 4 --short 4 --clients 4       options go to the benchmark
# MODEL (default tiny) is served by every replica, with REPLICA_OPTIONS (default below) and the
# JVM options REPLICA_JAVA_OPTS (for example "-Dkvtier.l3-timeout-base=10s"); the routers' extra
# options: ROUTE_OPTIONS; PHASES picks some of "unified pd" (the default, in that
# order). Build first: ./mvnw -B -q package -DskipTests
set -euo pipefail

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
bench=pd-bench
url_wait=3000 # tenths of a second for a process to listen
# shellcheck source=lib/bench-common.sh
source "$root/scripts/lib/bench-common.sh"
bench_init
model=${MODEL:-tiny}
replica_options=${REPLICA_OPTIONS:---device-pages 256 --host-pages 512 --max-running 8 --queue 256}
route_options=${ROUTE_OPTIONS:-}

serve() { # name, extra options: a replica publishing KV events; sets $spec to NAME,EVENTS,REPLAY
  local name=$1 events replay
  shift
  events=$(free_port)
  replay=$(free_port)
  # shellcheck disable=SC2086
  KVTIER_JAVA_OPTS="-Dkvtier.events.publisher=zmq -Dkvtier.events.endpoint=tcp://*:$events \
-Dkvtier.events.replay-endpoint=tcp://127.0.0.1:$replay ${REPLICA_JAVA_OPTS:-}" \
    "$root/bin/kvtier" serve --port 0 --model "$model" $replica_options "$@" >"$logs/$name.log" 2>&1 &
  pids+=($!)
  spec="$name,tcp://127.0.0.1:$events,tcp://127.0.0.1:$replay"
}

spec_of() { # name,events,replay: the --replica form once the replica listens
  local name=${1%%,*}
  echo "$(url_of "$name"),${1#*,}"
}

served_model() { # URL: the model id the replica serves
  curl -sf "$1/v1/models" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])'
}

route() { # name, route options: the router in the background (url_of NAME waits for it)
  local name=$1
  shift
  # shellcheck disable=SC2086
  "$root/bin/kvtier" route --port 0 $route_options "$@" >"$logs/$name.log" 2>&1 &
  pids+=($!)
}

bench() { # label, URL, served model, benchmark options: the mixed load
  local label=$1 url=$2 served=$3
  shift 3
  "$JAVA_HOME/bin/java" -cp "$jar" io.kvtier.bench.PdLoadBenchmark \
    --url "$url" --label "$label" --results "$results" --model "$served" "$@"
}

alone() { # label, URL, served model, benchmark options: one long request alone first (it warms
  # the processes up, and gives the costs without queueing)
  local label=$1 url=$2 served=$3
  shift 3
  "$JAVA_HOME/bin/java" -cp "$jar" io.kvtier.bench.PdLoadBenchmark \
    --url "$url" --label "$label-alone" --results "$logs/alone.txt" --model "$served" "$@" \
    --long 1 --short 0 --clients 1 --seed 999 # a prompt the mixed load does not send
}

metric() { # URL, metric name with its labels as /metrics prints them: the sum of its samples
  curl -sf "$1/metrics" | awk -v m="$2" 'index($0, m) == 1 {s += $NF} END {printf "%.6g\n", s + 0}'
}

snapshot() { # prefill URL, decode URL, router URL: the transfer figures' counters, in one line
  local v=()
  v+=("$(metric "$1" 'kvtier_pd_transfer_pages_total{direction="published"')")
  v+=("$(metric "$2" 'kvtier_pd_transfer_pages_total{direction="fetched"')")
  v+=("$(metric "$2" 'kvtier_pd_transfer_pages_total{direction="recomputed"')")
  v+=("$(metric "$1" 'kvtier_pd_transfer_bytes_total{direction="published"')")
  v+=("$(metric "$2" 'kvtier_pd_transfer_bytes_total{direction="fetched"')")
  v+=("$(metric "$1" 'kvtier_pd_transfer_seconds_sum')")
  v+=("$(metric "$2" 'kvtier_pd_transfer_seconds_sum')")
  v+=("$(metric "$2" 'kvtier_kv_bytes_per_token')")
  v+=("$(metric "$3" 'kvtier_route_phase_seconds_sum{phase="prefill"')")
  v+=("$(metric "$1" 'kvtier_prompt_tokens_total')")
  echo "${v[*]}"
}

for phase in ${PHASES:-unified pd}; do
  case $phase in
    unified)
      serve unified-0
      a=$spec
      serve unified-1
      b=$spec
      a=$(spec_of "$a")
      b=$(spec_of "$b")
      served=$(served_model "${a%%,*}")
      route route-unified --replica "$a" --replica "$b"
      url=$(url_of route-unified)
      echo "unified: route at $url over 2 replicas ($model; $replica_options)"
      alone unified "$url" "$served" "$@"
      bench unified "$url" "$served" "$@"
      stop_all
      ;;
    pd)
      mkdir -p "$logs/l3"
      serve prefill --role prefill --l3 file --l3-dir "$logs/l3"
      p=$spec
      serve decode --role decode --l3 file --l3-dir "$logs/l3"
      d=$spec
      p=$(spec_of "$p")
      d=$(spec_of "$d")
      served=$(served_model "${p%%,*}")
      route route-pd --prefill "$p" --decode "$d"
      url=$(url_of route-pd)
      echo "pd: route at $url over 1 prefill and 1 decode replica ($model; $replica_options; --l3 file)"
      alone pd "$url" "$served" "$@"
      prefill=${p%%,*}
      decode=${d%%,*}
      snapshot "$prefill" "$decode" "$url" >"$logs/after-alone.txt"
      bench pd "$url" "$served" "$@"
      snapshot "$prefill" "$decode" "$url" >"$logs/after-mixed.txt"
      python3 - "$logs/after-alone.txt" "$logs/after-mixed.txt" >"$logs/transfer.txt" <<'PY'
import sys
alone = [float(v) for v in open(sys.argv[1]).read().split()]
mixed = [float(v) for v in open(sys.argv[2]).read().split()]
def figures(what, v):
    (published, fetched, recomputed, publish_bytes, fetch_bytes, publish_s, fetch_s, token_bytes,
     prefill_s, prompt) = v
    def ms_per(seconds, tokens):
        return f"{seconds / tokens * 1000:.3f}" if tokens > 0 else "-"
    published_tokens = publish_bytes / token_bytes if token_bytes > 0 else 0
    fetched_tokens = fetch_bytes / token_bytes if token_bytes > 0 else 0
    print(f"{what}: {published:.0f} pages published ({published_tokens:.0f} tokens,"
          f" {publish_bytes / 2**20:.1f} MiB), {fetched:.0f} fetched ({fetched_tokens:.0f} tokens,"
          f" {fetch_bytes / 2**20:.1f} MiB), {recomputed:.0f} recomputed;"
          f" {token_bytes:.0f} KV bytes a token")
    print(f"  per prompt token: prefill {ms_per(prefill_s, prompt)} ms (the router's prefill phase,"
          f" queueing included), publish {ms_per(publish_s, published_tokens)} ms (end of prompt to"
          f" the L3 commit), fetch {ms_per(fetch_s, fetched_tokens)} ms (decode replica: arrival to"
          f" admission, the wait for the pages)")
figures("one long request alone", alone)
delta = [m - a for m, a in zip(mixed, alone)]
delta[7] = mixed[7]  # the KV bytes a token: a gauge
figures("the mixed load", delta)
PY
      stop_all
      ;;
    *)
      echo "pd-bench: PHASES holds $phase: use unified and pd" >&2
      exit 2
      ;;
  esac
done
echo
echo "one long request alone, before each load (the warm-up):"
"$JAVA_HOME/bin/java" -cp "$jar" io.kvtier.bench.PdLoadBenchmark --compare "$logs/alone.txt"
echo
echo "the mixed load:"
"$JAVA_HOME/bin/java" -cp "$jar" io.kvtier.bench.PdLoadBenchmark --compare "$results"
if [[ -f "$logs/transfer.txt" ]]; then
  cat "$logs/transfer.txt"
fi
exit 0
