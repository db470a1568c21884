#!/usr/bin/env bash
# Runs the kvtier JMH benchmarks, building the benchmarks jar first when it is missing or older
# than a source or pom it is made from. Every argument goes to JMH, for example:
#   modules/bench/run.sh                             all benchmarks (about 3 minutes on 2 cores)
#   modules/bench/run.sh RadixReplay -p pageSize=16  one benchmark class, one page size
#   modules/bench/run.sh -l                          list the benchmarks
#   modules/bench/run.sh -h                          JMH's options (-f, -wi, -i, -rf json, ...)
# Needs a JDK 25: $JAVA_HOME if it is one, else /usr/lib/jvm/temurin-25-jdk-amd64.
# BENCH_SKIP_BUILD=1 runs the jar as it is, even when stale.
set -euo pipefail

bench_dir=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
root=$(cd "$bench_dir/../.." && pwd)
jar="$bench_dir/target/benchmarks.jar"

java_version() {
  "$1/bin/java" -XshowSettings:properties -version 2>&1 \
    | awk -F'= ' '/java.specification.version/ {print $2}'
}

jdk=""
for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64; do
  if [[ -n "$candidate" && -x "$candidate/bin/java" ]]; then
    version=$(java_version "$candidate")
    if [[ "$version" =~ ^[0-9]+$ && "$version" -ge 25 ]]; then
      jdk="$candidate"
      break
    fi
  fi
done
if [[ -z "$jdk" ]]; then
  echo "run.sh: no JDK 25 found: set JAVA_HOME to a JDK 25" \
    "(e.g. /usr/lib/jvm/temurin-25-jdk-amd64)" >&2
  exit 1
fi

stale=""
if [[ ! -f "$jar" ]]; then
  stale="it is missing"
elif [[ "${BENCH_SKIP_BUILD:-0}" != 1 ]]; then
  newer=$(find "$root/pom.xml" "$root/modules" "$root/backend-sim" \
      \( -path '*/src/main/*' -o -name pom.xml \) -type f -newer "$jar" -print -quit \
      2>/dev/null || true)
  [[ -n "$newer" ]] && stale="older than $newer"
fi
if [[ -n "$stale" ]]; then
  echo "run.sh: building $jar ($stale)" >&2
  (cd "$root" && JAVA_HOME="$jdk" ./mvnw -B -q -pl modules/bench -am package -DskipTests)
fi

# JMH 1.37 reads field offsets through sun.misc.Unsafe, which JDK 24+ warns about
exec "$jdk/bin/java" --sun-misc-unsafe-memory-access=allow -jar "$jar" "$@"
