#!/usr/bin/env bash
# Runs `kvtier simulate` with every rank a process of its own, joined by the hazelcast collective
# on loopback (an embedded Hazelcast member per rank), then the same options with the local
# collective (ranks as threads), and checks that the two agree:
#   - every rank process exited 0 and printed the same final replica digest;
#   - rank 0's JSON equals the local run's in every field but wallSeconds.
#
#   scripts/simulate-ranks.sh R [simulate options...]
#   scripts/simulate-ranks.sh 3 --seed 7 --ack-delay skewed
#   scripts/simulate-ranks.sh 2 --workload multiturn:conversations=8   # + 1 kvtier cp-member
#
# The hazelcast collective agrees through Hazelcast's CP subsystem, which needs 3 CP members:
# with R < 3 ranks the script also starts 3 - R `kvtier cp-member` processes (plain members,
# not ranks) and stops them at the end.
#
# The script sets --collective, --rank, --ranks and --json itself; pass any other simulate
# option after R. Environment:
#   KVTIER_HAZELCAST_PORT  first port of the members (default 5701; they take the next ones up)
#   KVTIER_SIM_DIR         where the logs and JSON go (default: a new temporary directory)
# With --fail-rank R --fail-tick T every rank must stop with the same RANK_FAILED failure, and
# the local run fail alike; the script then says so and exits 1, as simulate itself does.
# A rank process that fails or dies is named with its cause, and the script stops there.
# Exit status: 0 when all agree and every check passed, 1 otherwise, 2 on a usage error.
set -euo pipefail

usage() {
  sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[[ $# -ge 1 && "$1" =~ ^[0-9]+$ && "$1" -ge 1 ]] || usage
ranks="$1"
shift
for arg in "$@"; do
  case "$arg" in
    --collective | --collective=* | --rank | --rank=* | --ranks | --ranks=* | --json | --json=*)
      echo "simulate-ranks: $arg is set by the script (R is the first argument); drop it" >&2
      exit 2
      ;;
  esac
done

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd -P)"
kvtier="$root/bin/kvtier"
port="${KVTIER_HAZELCAST_PORT:-5701}"
out="${KVTIER_SIM_DIR:-$(mktemp -d -t kvtier-ranks.XXXXXX)}"
mkdir -p "$out"

# bin/kvtier builds the project the first time; do it once here, not in R processes at once.
"$kvtier" --version >/dev/null

# A cluster of this run's own: members of another cluster name are refused.
cluster="kvtier-sim-$$-$RANDOM"
cp_members=$((ranks < 3 ? 3 - ranks : 0))
settings=(
  "hazelcast.cluster-name=$cluster"
  "hazelcast.port=$port"
  "hazelcast.port-count=$((ranks + cp_members + 2))"
  "hazelcast.members=127.0.0.1"
)
collective_args=(--collective hazelcast --ranks "$ranks")
for s in "${settings[@]}"; do
  collective_args+=(--collective-property "$s")
done

pids=()
cleanup() {
  local pid
  for pid in ${pids[@]+"${pids[@]}"}; do
    kill "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

member_pids=()
for ((i = 0; i < cp_members; i++)); do
  "$kvtier" cp-member "${settings[@]}" >"$out/cp-member-$i.log" 2>&1 &
  pids+=($!)
  member_pids+=($!)
done
rank_pids=()
for ((r = 0; r < ranks; r++)); do
  json=()
  if ((r == 0)); then
    json=(--json "$out/hazelcast.json")
  fi
  "$kvtier" simulate "${collective_args[@]}" --rank "$r" ${json[@]+"${json[@]}"} "$@" \
    >"$out/rank-$r.log" 2>"$out/rank-$r.err" &
  pids+=($!)
  rank_pids+=($!)
done
echo "simulate-ranks: $ranks rank processes over hazelcast (cluster $cluster, ports from $port," \
  "$cp_members cp-member processes); logs in $out"

failed=0
digests=()
statuses=()
lines=()
verdicts=()
for ((r = 0; r < ranks; r++)); do
  status=0
  wait "${rank_pids[$r]}" || status=$?
  line="$(grep -E "^rank $r of $ranks \(hazelcast\): final replica digest" "$out/rank-$r.log" || true)"
  statuses+=("$status")
  lines+=("$line")
  # The verdict, PASS or FAIL: MESSAGE, follows the digest comparison's "; ".
  verdicts+=("$(sed -E 's/^.*equal on every rank: [^;]*; //' <<<"$line")")
  digest="$(sed -E 's/.*final replica digest ([0-9a-f]+).*/\1/' <<<"$line")"
  digests+=("${digest:-none}")
done
for pid in ${member_pids[@]+"${member_pids[@]}"}; do
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
done

grep -v '^rank [0-9]' "$out/rank-0.log" || true

# A rank whose step failed (--fail-rank) stops the whole group: every rank exits 1 with the
# same RANK_FAILED verdict, and the local run must fail alike. The digests differ then (each
# rank stopped at its own point of the tick), so they are not compared.
together=1
for ((r = 0; r < ranks; r++)); do
  if [[ "${statuses[$r]}" != 1 || "${verdicts[$r]}" != "FAIL: RANK_FAILED:"* \
    || "${verdicts[$r]}" != "${verdicts[0]}" ]]; then
    together=0
  fi
done
if ((together)); then
  echo "simulate-ranks: all $ranks ranks stopped together: ${verdicts[0]#FAIL: }"
  status=0
  "$kvtier" simulate --ranks "$ranks" --json "$out/local.json" "$@" >"$out/local.log" 2>&1 \
    || status=$?
  fields() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["failure"], d["failureTick"], d["failureMessage"])' "$1"
  }
  if ((status != 1)) || [[ ! -f "$out/hazelcast.json" ]]; then
    echo "simulate-ranks: FAIL: the local run exited $status (1 expected), or rank 0 wrote no" \
      "JSON; see $out/local.log"
  elif [[ "$(fields "$out/local.json")" != "$(fields "$out/hazelcast.json")" ]]; then
    echo "simulate-ranks: FAIL: the local run failed otherwise: $(fields "$out/local.json")"
  else
    echo "simulate-ranks: the local run failed alike (failure, failureTick, failureMessage)"
  fi
  exit 1
fi

# A rank that failed, died or printed no digest line: say why, rank by rank, and stop. Comparing
# digests or running the local run would only add a diff that buries the cause.
for ((r = 0; r < ranks; r++)); do
  if ((statuses[r] != 0)) || [[ -z "${lines[$r]}" ]]; then
    if [[ -n "${lines[$r]}" ]]; then
      why="${verdicts[$r]}"
    elif ((statuses[r] > 128)); then
      why="died by signal $((statuses[r] - 128)) before its digest line"
    else
      # Its own message, not the JVM's warnings above it.
      why="$(grep -m 1 '^kvtier ' "$out/rank-$r.err" 2>/dev/null || tail -n 1 "$out/rank-$r.err" 2>/dev/null || true)"
      why="no digest line; its error: $why"
    fi
    echo "simulate-ranks: rank $r exited ${statuses[$r]}: $why (see $out/rank-$r.log and $out/rank-$r.err)"
    failed=1
  fi
done
if ((failed)); then
  echo "simulate-ranks: FAIL: not every rank process passed; digests and the local run not compared"
  exit 1
fi
if [[ "$(printf '%s\n' "${digests[@]}" | sort -u | wc -l)" -ne 1 ]]; then
  echo "simulate-ranks: FAIL: the ranks ended with different digests: ${digests[*]}"
  failed=1
else
  echo "simulate-ranks: all $ranks ranks exited with digest ${digests[0]}"
fi

status=0
"$kvtier" simulate --ranks "$ranks" --json "$out/local.json" "$@" >"$out/local.log" 2>&1 \
  || status=$?
if ((status != 0)); then
  echo "simulate-ranks: FAIL: the local run exited $status; see $out/local.log"
  failed=1
elif [[ ! -f "$out/hazelcast.json" ]]; then
  echo "simulate-ranks: FAIL: rank 0 wrote no JSON"
  failed=1
else
  strip() { sed -E 's/"wallSeconds":[^,}]*,?//' "$1"; }
  if diff <(strip "$out/local.json") <(strip "$out/hazelcast.json") >"$out/json.diff"; then
    echo "simulate-ranks: the hazelcast result equals the local one (JSON, wall time aside)"
  else
    echo "simulate-ranks: FAIL: the hazelcast and local results differ:"
    cat "$out/json.diff"
    failed=1
  fi
fi
exit "$failed"
