#!/usr/bin/env bash
# Prefill and decode tokens per second of kvtier's llama runner against llama.cpp (de.kherud:llama,
# in-process) on random-weight files at a real shape, written on first use under
# modules/bench/target/llama-speed. Run from the repository root; every argument goes to
# io.kvtier.bench.LlamaSpeed (--help lists them), for example:
#   modules/bench/llama-speed.sh                                  smollm-135m, f32 and q8_0
#   modules/bench/llama-speed.sh --types q4_0 --prompt 256 --decode 64
# Builds the benchmarks jar through run.sh's rules when it is missing or stale. KVTIER_THREADS
# (default 2) is the thread count of both runners.
set -euo pipefail

bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$bench_dir/../.." && pwd)
jar="$bench_dir/target/benchmarks.jar"
jdk="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
threads="${KVTIER_THREADS:-2}"

if [[ ! -f "$jar" || "${BENCH_SKIP_BUILD:-0}" != 1 && -n $(find "$root/pom.xml" "$root/modules" \
    \( -path '*/src/main/*' -o -name pom.xml \) -type f -newer "$jar" -print -quit) ]]; then
  echo "llama-speed.sh: building $jar" >&2
  (cd "$root" && JAVA_HOME="$jdk" ./mvnw -B -q -pl modules/bench -am package -DskipTests)
fi

cd "$root"
# kvtier's products run on the common fork-join pool; the calling thread waits for them (measured:
# parallelism 1 gave half the prefill rate of 2 on 2 cores), so the pool gets all the threads
exec "$jdk/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
  -Djava.util.concurrent.ForkJoinPool.common.parallelism="$threads" \
  -cp "$jar" io.kvtier.bench.LlamaSpeed --threads "$threads" "$@"
