#!/usr/bin/env bash
# Hazelcast agreement latency: one round of the hazelcast collective (allReduce(MIN, long[1]) on
# 3 ranks) beside a bare CP IAtomicLong operation, in the same run, and a 32 KiB broadcast.
#
#   collective-hazelcast/bench.sh [--repeats 3] [--blocks 10] [--per-block 200] [--warmup 500]
#                                 [--payload 32768]
#
# Each repeat is one JVM running io.kvtier.collective.hazelcast.HazelcastAgreementLatency: 3
# embedded members on loopback (random ports and cluster name), one rank per member, warmup,
# then blocks that run each mode in turn (allreduce, cp-increment, cp-get, broadcast) so that
# every mode meets the same load. cp-increment is also measured from members 1 and 2, and pooled:
# the member that leads the CP group (chosen at random per run) is faster. Each mode line gives
# p50/p90/p99/max in milliseconds as rank 0 (or the named member) sees it; the ratio lines divide
# the round by the bare increment of rank 0's member and by the pooled one.
# Results: collective-hazelcast/target/bench/results.txt.
#
# Builds the module with `./mvnw -B -o -q package -pl collective-hazelcast -am -DskipTests` when
# its jar or target/lib is missing (package, never install); KVTIER_REBUILD=1 forces it.
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd -P)"
root="$(cd "$here/.." && pwd -P)"

repeats=3 args=()
while (($# > 0)); do
  case "$1" in
    --repeats) repeats="$2" ;;
    --blocks | --per-block | --warmup | --payload) args+=("$1" "$2") ;;
    *) echo "bench.sh: unknown option '$1' (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
  shift 2
done

if [[ -z "${JAVA_HOME:-}" || ! -x "$JAVA_HOME/bin/java" ]]; then
  for home in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*25*; do
    [[ -x "$home/bin/java" ]] && { JAVA_HOME="$home"; break; }
  done
fi
if [[ -z "${JAVA_HOME:-}" || ! -x "$JAVA_HOME/bin/java" ]]; then
  echo "bench.sh: no JDK 25 found: export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64" >&2
  exit 1
fi
export JAVA_HOME

jar() { compgen -G "$here/target/kvtier-collective-hazelcast-*.jar" | grep -v -e '-sources' -e '-tests' | head -1; }
if [[ "${KVTIER_REBUILD:-0}" == "1" || -z "$(jar)" || ! -d "$here/target/lib" ]]; then
  echo "bench.sh: building collective-hazelcast (./mvnw -B -o -q package -pl collective-hazelcast -am -DskipTests)" >&2
  (cd "$root" && ./mvnw -B -o -q package -pl collective-hazelcast -am -DskipTests) >&2
fi

# The openings Hazelcast asks for on the module path, as bin/kvtier grants them.
java_opts=(-Xmx1g --add-modules java.se
  --add-exports java.base/jdk.internal.ref=com.hazelcast.core
  --add-opens java.base/java.lang=com.hazelcast.core
  --add-opens java.base/sun.nio.ch=com.hazelcast.core
  --add-opens java.management/sun.management=com.hazelcast.core
  --add-opens jdk.management/com.sun.management.internal=com.hazelcast.core
  --module-path "$(jar):$here/target/lib"
  -m io.kvtier.collective.hazelcast/io.kvtier.collective.hazelcast.HazelcastAgreementLatency)

out="$here/target/bench"
mkdir -p "$out"
results="$out/results.txt"
: >"$results"
echo "# $(date -u +%FT%TZ) $("$JAVA_HOME/bin/java" -version 2>&1 | head -1); $(nproc) cores" | tee -a "$results"
for ((repeat = 1; repeat <= repeats; repeat++)); do
  echo "# repeat $repeat, load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results"
  "$JAVA_HOME/bin/java" "${java_opts[@]}" ${args[@]+"${args[@]}"} | tee -a "$results"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results"
