#!/usr/bin/env bash
# The GPU check of the cuda backend, in one run of under 5 minutes on a machine with an NVIDIA GPU:
#
#   1. what the machine has (nvidia-smi) and what the cuda backend's probe says;
#   2. the backend's tests with -Dkvtier.cuda.required=true (a skip is a failure): the device,
#      host, contiguous-copy and asserting conformance suites and the engine tests, on the GPU;
#   3. CudaBandwidthBenchmark: page batches (page sizes 16 and 64, 32 layers x 8 KV heads x 128
#      head dim x 2 bytes) against one contiguous copy of the same bytes in the same run; passes
#      when page size 64 reaches 80% of the contiguous bandwidth in both directions;
#   4. `kvtier simulate --device cuda --ranks 1` with page-content verification, if the command
#      exists and takes --device (skipped with a message otherwise);
#   then a summary. Exit status 0 when every step that ran passed.
#
# Usage:
#   backend-cuda/device-check.sh             build with ./mvnw (offline first, then online), run
#   backend-cuda/device-check.sh --prepare   build and assemble backend-cuda/target/device-check,
#                                            everything steps 1-4 need without Maven or network
#   backend-cuda/device-check.sh --maven     build with Maven even if the assembled bundle exists
#
# A GPU machine without network access runs the bundle: prepare it where Maven Central is
# reachable, carry backend-cuda/target/device-check along, and run the script there; it uses the
# bundle whenever it exists (plain java and JUnit's console launcher, no Maven).
set -euo pipefail

script="${BASH_SOURCE[0]}"
while [[ -L "$script" ]]; do
  target="$(readlink "$script")"
  [[ "$target" == /* ]] && script="$target" || script="$(dirname "$script")/$target"
done
root="$(cd "$(dirname "$script")/.." && pwd -P)"
cd "$root"

bundle="$root/backend-cuda/target/device-check"
junit_platform_version="1.14.1"
gpu_tests=(CudaDeviceMemoryConformanceTest CudaHostMemoryConformanceTest
  CudaContiguousCopiesConformanceTest CudaAssertingConformanceTest CudaTransferEngineTest)
mode="run"
force_maven=0
case "${1:-}" in
  --prepare) mode="prepare" ;;
  --maven) force_maven=1 ;;
  "") ;;
  *) echo "usage: $0 [--prepare | --maven]" >&2; exit 64 ;;
esac

started=$(date +%s)
summary=()
failed=0
say() { printf '\n=== %s (%ss)\n' "$1" "$(($(date +%s) - started))"; }
pass() { summary+=("PASS  $1"); }
fail() { summary+=("FAIL  $1"); failed=1; }
skip() { summary+=("SKIP  $1"); }

print_summary() {
  say "summary"
  local line
  for line in "${summary[@]}"; do
    echo "  $line"
  done
  echo "  total time: $(($(date +%s) - started))s"
  if ((failed)); then echo "DEVICE CHECK: FAIL"; else echo "DEVICE CHECK: PASS"; fi
}

# ---- JDK 25, as bin/kvtier finds it ----
java_major() {
  local version
  version="$("$1" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')" || return 0
  version="${version#1.}"
  echo "${version%%[.+-]*}"
}
is_jdk25() {
  local home="$1" major
  [[ -x "$home/bin/java" ]] || return 1
  major="$(java_major "$home/bin/java")"
  [[ "$major" =~ ^[0-9]+$ ]] && ((major >= 25))
}
find_jdk() {
  local home
  if [[ -n "${JAVA_HOME:-}" ]] && is_jdk25 "$JAVA_HOME"; then echo "$JAVA_HOME"; return 0; fi
  for home in /usr/lib/jvm/*25* /opt/java/* /usr/local/*jdk*; do
    if [[ -d "$home" ]] && is_jdk25 "$home"; then echo "$home"; return 0; fi
  done
  if command -v java >/dev/null && is_jdk25 "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"; then
    dirname "$(dirname "$(readlink -f "$(command -v java)")")"
    return 0
  fi
  return 1
}
if ! JAVA_HOME="$(find_jdk)"; then
  echo "device-check: no JDK 25 or newer found (JAVA_HOME=${JAVA_HOME:-unset}); install one, for" \
    "example Temurin 25, and export JAVA_HOME" >&2
  exit 1
fi
export JAVA_HOME
java="$JAVA_HOME/bin/java"

# ---- building ----
mvn_offline=""
maven() { ./mvnw -B $mvn_offline "$@"; }

maven_build() {
  say "build: ./mvnw install (backend-cuda and what it needs)"
  if ./mvnw -B -q -o -pl backend-cuda -am install -DskipTests; then
    mvn_offline="-o"
  else
    echo "offline build failed; trying online"
    ./mvnw -B -q -pl backend-cuda -am install -DskipTests || return 1
  fi
  maven -q -pl backend-cuda dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory=target/lib || return 1
  # The simulate step needs the CLI; its failure to build only skips that step.
  maven -q -pl modules/cli -am install -DskipTests || echo "the cli did not build: the simulate step will be skipped"
}

cuda_jar() { compgen -G "$root/backend-cuda/target/kvtier-backend-cuda-*.jar" | grep -v -e '-sources' -e '-tests' | head -1 || true; }
cli_jar() { compgen -G "$root/modules/cli/target/kvtier-cli-*.jar" | grep -v -e '-sources' -e '-tests' | head -1 || true; }

prepare_bundle() {
  maven_build || { echo "device-check: the build failed" >&2; exit 1; }
  say "assemble $bundle"
  rm -rf "$bundle"
  mkdir -p "$bundle/modules" "$bundle/natives" "$bundle/test" "$bundle/cli/lib"
  cp "$(cuda_jar)" "$root"/backend-cuda/target/lib/*.jar "$bundle/modules/"
  cp "$root"/backend-cuda/target/natives/* "$bundle/natives/"
  maven -q -pl backend-cuda dependency:copy-dependencies -DincludeScope=test \
    -DoutputDirectory="$bundle/test"
  # Online: no build resolves the console launcher, so it is not in the local repository.
  ./mvnw -B -q -pl backend-cuda dependency:copy \
    -Dartifact="org.junit.platform:junit-platform-console-standalone:$junit_platform_version" \
    -DoutputDirectory="$bundle/test"
  cp "$(cuda_jar)" "$bundle/test/"
  cp -r "$root/backend-cuda/target/test-classes" "$bundle/test-classes"
  if [[ -n "$(cli_jar)" && -d "$root/modules/cli/target/lib" ]]; then
    cp "$(cli_jar)" "$bundle/cli/"
    cp "$root"/modules/cli/target/lib/*.jar "$bundle/cli/lib/"
  fi
  echo "assembled $(du -sh "$bundle" | cut -f1) in $bundle: carry backend-cuda/target/device-check"
}

if [[ "$mode" == "prepare" ]]; then
  prepare_bundle
  exit 0
fi

use_bundle=0
if ((!force_maven)) && [[ -d "$bundle/modules" ]]; then
  use_bundle=1
  build_label="prepared bundle (no Maven)"
  say "using the prepared bundle $bundle (delete it, or pass --maven, to build with Maven)"
  if [[ -n "$(find "$root/backend-cuda/src" "$root/backend-cuda/pom.xml" -newer "$bundle/modules" -print -quit)" ]]; then
    echo "warning: backend-cuda changed after the bundle was assembled: it tests the older code;" \
      "run --prepare again (or --maven where Maven Central is reachable)"
  fi
  modules="$bundle/modules"
  natives="$bundle/natives"
else
  if ! maven_build; then
    fail "build with ./mvnw (offline and online both failed; on a machine without network run --prepare elsewhere and carry the bundle)"
    print_summary
    exit 1
  fi
  modules="$(cuda_jar):$root/backend-cuda/target/lib"
  natives="$root/backend-cuda/target/natives"
  build_label="build with ./mvnw${mvn_offline:+ (offline)}"
fi
pass "$build_label"
module_path="$modules"
if ((use_bundle)); then module_path="$bundle/modules"; fi
# JCuda loads its JNI library from java.library.path; FFM (the probe) and JNI (JCuda) need native
# access, granted by module on the module path and to ALL-UNNAMED on the class path.
native_modules="io.kvtier.backend.cuda,jcuda"
jvm=(-Djava.library.path="$natives" --enable-native-access="$native_modules")
jvm_classpath=(-Djava.library.path="$natives" --enable-native-access=ALL-UNNAMED)

# ---- 1. the machine and the probe ----
say "1. machine and probe"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max \
    --format=csv || true
else
  echo "nvidia-smi not found"
fi
if "$java" "${jvm[@]}" --module-path "$module_path" \
  -m io.kvtier.backend.cuda/io.kvtier.backend.cuda.CudaDiagnostics --require; then
  pass "probe: cuda available"
else
  fail "probe: cuda unavailable (see the reason above); the other steps need a GPU"
  print_summary
  exit 1
fi

# ---- 2. tests on the GPU ----
say "2. GPU tests (-Dkvtier.cuda.required=true)"
log="$(mktemp)"
if ((use_bundle)); then
  selectors=()
  for t in "${gpu_tests[@]}"; do selectors+=(--select-class "io.kvtier.backend.cuda.$t"); done
  set +e
  timeout 200 "$java" -Dkvtier.cuda.required=true "${jvm_classpath[@]}" \
    -cp "$bundle/test-classes:$bundle/test/*" org.junit.platform.console.ConsoleLauncher execute \
    --disable-banner --details=tree --fail-if-no-tests "${selectors[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  counts="$(grep -E 'tests (successful|failed|aborted|skipped)' "$log" | tr -s ' []' ' ' | paste -sd, - || true)"
else
  set +e
  timeout 200 ./mvnw -B $mvn_offline -pl backend-cuda test -Dkvtier.cuda.required=true 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  counts="$(grep -E '^\[(INFO|WARNING|ERROR)\] Tests run: [0-9]+, Failures' "$log" | tail -1 | sed -E 's/^\[[A-Z]+\] //' || true)"
fi
if ((rc == 0)); then pass "GPU tests: ${counts:-see log}"; else fail "GPU tests (exit $rc): ${counts:-see log above}"; fi

# ---- 3. bandwidth ----
say "3. bandwidth: page batches vs one contiguous copy"
set +e
timeout 150 "$java" -Xmx4g "${jvm[@]}" --module-path "$module_path" \
  -m io.kvtier.backend.cuda/io.kvtier.backend.cuda.CudaBandwidthBenchmark pages=64 iterations=7 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
acceptance="$(grep '^acceptance' "$log" || true)"
case "$rc" in
  0) pass "bandwidth: ${acceptance#acceptance }" ;;
  3) fail "bandwidth: ${acceptance#acceptance }" ;;
  *) fail "bandwidth: the benchmark failed (exit $rc)" ;;
esac

# ---- 4. kvtier simulate on the GPU ----
say "4. kvtier simulate --device cuda --ranks 1"
cli=()
if ((use_bundle)); then
  if [[ -n "$(compgen -G "$bundle/cli/kvtier-cli-*.jar")" ]]; then
    cli=("$java" --enable-native-access="$native_modules" -Djava.library.path="$natives"
      --module-path "$(compgen -G "$bundle/cli/kvtier-cli-*.jar" | head -1):$bundle/cli/lib:$bundle/modules"
      -m io.kvtier.cli/io.kvtier.cli.KvTierCli)
  fi
elif [[ -n "$(cli_jar)" ]]; then
  if compgen -G "$root/modules/cli/target/lib/kvtier-backend-cuda-*.jar" >/dev/null; then
    cli=(env "KVTIER_JAVA_OPTS=-Djava.library.path=$natives --enable-native-access=jcuda" "$root/bin/kvtier")
  else
    # the cli does not depend on the cuda backend yet: put it on the module path here.
    cli=("$java" --enable-native-access="$native_modules" -Djava.library.path="$natives"
      --module-path "$(cli_jar):$root/modules/cli/target/lib:$modules"
      -m io.kvtier.cli/io.kvtier.cli.KvTierCli)
  fi
fi
if ((${#cli[@]} == 0)); then
  skip "simulate: the kvtier CLI was not built"
else
  help="$("${cli[@]}" simulate --help 2>&1 || true)"
  if ! grep -q -- '--device' <<<"$help"; then
    echo "$help" | head -5
    skip "simulate: 'kvtier simulate' does not exist or takes no --device option yet"
  else
    verify=()
    flag="$(grep -oE -- '--verify[a-z-]*' <<<"$help" | head -1 || true)"
    if [[ -n "$flag" ]]; then verify=("$flag"); fi
    set +e
    timeout 90 "${cli[@]}" simulate --device cuda --ranks 1 ${verify[@]+"${verify[@]}"} 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    set -e
    if ((rc == 0)); then
      pass "simulate --device cuda --ranks 1 ${verify[*]:-(pages verified by the simulator itself)}"
    else
      fail "simulate --device cuda --ranks 1 ${verify[*]:-} (exit $rc)"
    fi
  fi
fi
rm -f "$log"

print_summary
exit "$failed"
