#!/usr/bin/env bash
# Context parallelism (issue 32), measured with kvtier serve: docs/PERFORMANCE.md,
# "Context parallelism", shows what it printed and on which machine.
#
#   scripts/cp-bench.sh memory MODEL.gguf [RANKS...]          # default ranks 1 2 4 8
#   scripts/cp-bench.sh speed MODEL.gguf [PROMPT] [TOKENS]    # default 1500 tokens, 16 generated
#
# memory: serves MODEL with --parallel cp on each rank count R (rank threads, one process) with
#   --device-pages PAGES x R (PAGES=256 unless set) and prints rank 0's kvtier_kv_bytes_per_token
#   from /metrics, the device pool's bytes per rank (the same for every R) and the tokens the
#   group's device pools hold (R times one rank's).
# speed: serves MODEL on one rank, on 2 tp ranks and on 2 cp ranks (SETUPS, default
#   "one:1:tp tp:2:tp cp:2:cp": NAME:RANKS:PARALLEL each, "one" first), one server after the other
#   (--no-prefix-cache, so every prompt is computed), sends one warm-up request, then one streamed
#   completion of PROMPT random token ids with max_tokens TOKENS, timed with curl: TTFT is the
#   time to the first streamed chunk, decode tokens/s the chunks after the first over the time
#   after it. Prints each setup's figures and the ratios to the one-rank run.
# Every server listens on a free port (--port 0) and is stopped before the next starts. Extra
# kvtier serve options go in SERVE_OPTS. Needs the jars (./mvnw -B -q package -DskipTests),
# curl and python3. Exit status: 0, 1 if a server or a request failed, 2 on a usage error.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
usage() { sed -n '4,5p' "$0" | sed 's/^# */usage: /' >&2; exit 2; }
[[ $# -ge 2 ]] || usage
mode=$1; model=$2; shift 2
[[ -f "$model" ]] || { echo "cp-bench: no model file $model" >&2; exit 2; }
work=$(mktemp -d); pid=
cleanup() { [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# start NAME ARGS...: starts kvtier serve, waits for its listening line, sets $port.
start() {
  local name=$1; shift
  # shellcheck disable=SC2086
  "$root/bin/kvtier" serve --model "$model" --port 0 "$@" ${SERVE_OPTS:-} > "$work/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$work/$name.log" | head -1)
    [[ -n "$port" ]] && return 0
    kill -0 "$pid" 2>/dev/null || { echo "cp-bench: $name did not start:" >&2; cat "$work/$name.log" >&2; exit 1; }
    sleep 1
  done
  echo "cp-bench: $name did not listen within 600 s" >&2; exit 1
}
stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; }
metric() {
  local v=
  for _ in 1 2 3 4 5; do
    v=$(curl -sf "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 ~ "^"m {print $2; exit}') || true
    [[ -n "$v" ]] && { echo "$v"; return 0; }
    sleep 1
  done
  echo "cp-bench: no $1 in /metrics" >&2; exit 1
}
served() { curl -sf "http://127.0.0.1:$port/v1/models" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])'; }

case "$mode" in
memory)
  [[ $# -gt 0 ]] || set -- 1 2 4 8
  printf '%-6s %-22s %-14s %-22s %s\n' ranks "KV bytes/token/rank" "device pages" "device bytes per rank" "tokens the group holds"
  for r in "$@"; do
    start "cp$r" --ranks "$r" --parallel cp --device-pages $(( ${PAGES:-256} * r ))
    bpt=$(metric kvtier_kv_bytes_per_token)
    pages=$(sed -n 's/.*device \([0-9]*\) pages.*/\1/p' "$work/cp$r.log" | head -1)
    size=$(sed -n 's/.*pages of \([0-9]*\) tokens.*/\1/p' "$work/cp$r.log" | head -1)
    printf '%-6s %-22s %-14s %-22s %s\n' "$r" "${bpt%.*}" "$pages" \
      "$(( ${bpt%.*} * pages * size ))" "$(( pages * size ))"
    stop
  done
  echo "(a rank's page holds page-size tokens of 1/R of each token's KV: the same bytes per rank hold R times the tokens)"
  ;;
speed)
  prompt=${1:-1500}; tokens=${2:-16}
  python3 -c "import json,random; r=random.Random(1); print(json.dumps([r.randrange(300, 30000) for _ in range($prompt)]))" > "$work/ids.json"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; prompt $prompt token ids, max_tokens $tokens"
  printf '%-8s %-10s %-12s %-14s %s\n' setup "TTFT s" "decode tok/s" "tokens out" "load after"
  for setup in ${SETUPS:-one:1:tp tp:2:tp cp:2:cp}; do
    IFS=: read -r name r par <<< "$setup"
    start "$name" --ranks "$r" --parallel "$par" --no-prefix-cache --request-timeout 3600
    id=$(served)
    curl -sf "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
      -d "{\"model\":\"$id\",\"prompt\":[1,2,3,4,5,6,7,8],\"max_tokens\":4}" > /dev/null
    python3 -c "import json,sys; print(json.dumps({'model':sys.argv[1],'prompt':json.load(open(sys.argv[2])),'max_tokens':int(sys.argv[3]),'stream':True,'stream_options':{'include_usage':True}}))" \
      "$id" "$work/ids.json" "$tokens" > "$work/req.json"
    t0=$(date +%s.%N)
    curl -sfN "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
      -d @"$work/req.json" | while IFS= read -r line; do
        if [[ "$line" == data:* ]]; then printf '%s %s\n' "$(date +%s.%N)" "${line#data: }"; fi
      done > "$work/$name.events"
    # TTFT: the first chunk; decode: the chunks with text after it, over the time to the last.
    read -r ttft tps n < <(python3 - "$t0" "$work/$name.events" <<'PY'
import json, sys
t0 = float(sys.argv[1]); chunks = []; usage = None
for line in open(sys.argv[2]):
    t, body = line.split(" ", 1)
    if body.strip() == "[DONE]":
        continue
    d = json.loads(body)
    usage = d.get("usage") or usage
    if d.get("choices") and d["choices"][0].get("finish_reason") is None:
        chunks.append(float(t))
if len(chunks) < 2:
    sys.exit("cp-bench: fewer than 2 token chunks streamed")
n = usage["completion_tokens"] if usage else len(chunks)
print(f"{chunks[0] - t0:.2f} {(len(chunks) - 1) / (chunks[-1] - chunks[0]):.2f} {n}")
PY
    )
    echo "$name $ttft $tps" >> "$work/results"
    printf '%-8s %-10s %-12s %-14s %s\n' "$name" "$ttft" "$tps" "$n" "$(cut -d' ' -f1 /proc/loadavg)"
    stop
  done
  python3 - "$work/results" <<'PY'
import sys
rows = {n: (float(t), float(d)) for n, t, d in (l.split() for l in open(sys.argv[1]))}
one = rows["one"]
for n, (t, d) in rows.items():
    if n != "one":
        print(f"{n} / one rank: TTFT x{t / one[0]:.2f}, decode tok/s x{d / one[1]:.2f}")
if "tp" in rows and "cp" in rows:
    print(f"cp / tp: TTFT x{rows['cp'][0] / rows['tp'][0]:.2f},"
          f" decode tok/s x{rows['cp'][1] / rows['tp'][1]:.2f}")
PY
  ;;
*) usage ;;
esac
