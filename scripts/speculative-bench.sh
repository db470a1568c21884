#!/usr/bin/env bash
# Generation speed of kvtier serve with and without speculative decoding on one GGUF file: one
# server per setting (none, --speculative draft-layer:copy-last, --speculative model:FILE, k=4),
# a warm-up completion, then three greedy completions of N tokens one after the other, timed end
# to end; prints the seconds, the load average, the answers (hex prefix and token count: they
# must be equal across settings) and the speculation metrics (docs/PERFORMANCE.md). The pools
# are 128 device and 256 host pages (the default pools took most of a run to allocate).
#   scripts/speculative-bench.sh FILE.gguf [N]        N tokens a completion (default 64)
# Build first: ./mvnw -B -q package -DskipTests
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
model=${1:?usage: scripts/speculative-bench.sh FILE.gguf [N]}
n=${2:-64}
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true' EXIT
body() { echo "{\"model\":\"m\",\"prompt\":[1,$1],\"max_tokens\":$n,\"temperature\":0}"; }
complete() {
  curl -sf "localhost:$port/v1/completions" -H 'content-type: application/json' -d "$(body "$1")"
}
for setting in "" "--speculative draft-layer:copy-last --num-speculative-tokens 4" \
  "--speculative model:$model --num-speculative-tokens 4"; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # shellcheck disable=SC2086 # the setting is several options
  "$root/bin/kvtier" serve --model "$model" --served-model-name m --port "$port" \
    --max-context 1024 --device-pages 128 --host-pages 256 $setting >"${TMPDIR:-/tmp}/speculative-bench-server.log" 2>&1 &
  pid=$!
  timeout 120 bash -c "until curl -sf localhost:$port/health >/dev/null; do sleep 1; done"
  complete 300 >/dev/null
  start=$(date +%s.%N)
  answers=""
  for p in 301 302 303; do
    answers+="$(complete "$p" | python3 -c 'import json, sys
d = json.load(sys.stdin)
print(d["choices"][0]["text"].encode().hex()[:24] + "/" + str(d["usage"]["completion_tokens"]))') "
  done
  end=$(date +%s.%N)
  metrics=$(curl -sf "localhost:$port/metrics" \
    | grep -E '^kvtier_speculative_(acceptance_rate|accepted_length)\{tier="none"' | tr '\n' ' ' || true)
  printf "%-62s %6.2f s  load %s  answers %s %s\n" "${setting:-none}" \
    "$(python3 -c "print($end - $start)")" "$(cut -d' ' -f1 /proc/loadavg)" "$answers" "$metrics"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
done
