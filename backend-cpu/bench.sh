#!/usr/bin/env bash
# Load-back throughput of the cpu backend's transfer engine against plain MemorySegment copies,
# in one run (io.kvtier.backend.cpu.CpuCopyBenchmark; figures in backend-cpu/README.md).
#
#   backend-cpu/bench.sh [pages=32] [rounds=25]
#
# Compiles the module first when its classes are missing (./mvnw -o -q -pl backend-cpu -am
# compile). Needs a JDK 25: $JAVA_HOME if it is one, else /usr/lib/jvm/temurin-25-jdk-amd64.
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd -P)"
root="$(cd "$here/.." && pwd -P)"
java_home="${JAVA_HOME:-}"
if [[ -z "$java_home" || ! -x "$java_home/bin/java" ]] \
  || ! "$java_home/bin/java" -version 2>&1 | grep -q '"25'; then
  java_home=/usr/lib/jvm/temurin-25-jdk-amd64
fi
if [[ ! -d "$here/target/classes/io" || ! -d "$root/modules/spi/target/classes/io" ]]; then
  echo "bench.sh: compiling backend-cpu (./mvnw -o -q -pl backend-cpu -am compile)" >&2
  (cd "$root" && JAVA_HOME="$java_home" ./mvnw -B -o -q -pl backend-cpu -am compile) >&2
fi
exec "$java_home/bin/java" \
  --module-path "$here/target/classes:$root/modules/spi/target/classes" \
  -m io.kvtier.backend.cpu/io.kvtier.backend.cpu.CpuCopyBenchmark "$@"
