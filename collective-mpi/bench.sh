#!/usr/bin/env bash
# MPI allReduce latency: kvtier's mpi collective (and its bare binding) against C making the same
# MPI_Allreduce, in the same run, under mpirun -np 2 and -np 4.
#
#   collective-mpi/bench.sh [--repeats 3] [--ranks "2 4"] [--lengths 1,64] [--op MIN]
#                           [--iterations 10000] [--warmup 100000] [--rounds 31] [--inline-longs 128]
#
# Compiles src/main/c/mpi_allreduce_latency.c with mpicc into target/bench/, twice: a program
# and a shared library. Each repeat runs, for each rank count:
#   1. the C program (`c`): warmup, then rounds of timed MPI_Allreduce calls;
#   2. one Java job, io.kvtier.collective.mpi.internal.MpiAllReduceLatency, whose ranks
#      interleave rounds of five modes in the same processes: the C library's loop (`c-lib`, the
#      same code as the program, called once per round), C making the MPI calls the collective
#      makes once its frame size is learnt (`c-lib-same`: one frame of 2 + length longs when the
#      array rides in it, else a frame of 2 + 1 longs and the array's own MPI_Allreduce: the
#      protocol's own cost), the kvtier collective (`java-collective`: allReduce, which returns
#      a new array; `java-collective-into`: allReduceInto a reused one) and the bare binding
#      (`java-binding`). Interleaving makes every mode meet the same load, which matters on a
#      shared machine; `c` and `c-lib` should agree.
# Same iterations, warmup, rounds and arrays everywhere; each line is rank 0's best and median
# round (many short rounds, and the best one as the figure: on a shared machine it is the round
# no other process interrupted). The summary gives, per rank count and length, the median over
# the repeats of each best, and the ratios java/c-lib (median and spread over the repeats).
# Results: collective-mpi/target/bench/results.txt.
#
# Needs mpicc and mpirun (apt-get install openmpi-bin libopenmpi-dev) and a JDK 25; builds the
# module first when its jar is missing. Loopback only (btl self,vader), oversubscribed, unbound.
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd -P)"
root="$(cd "$here/.." && pwd -P)"

repeats=3 ranks_list="2 4" lengths=1,64 op=MIN iterations=10000 warmup=100000 rounds=31 inline=128
while (($# > 0)); do
  case "$1" in
    --repeats) repeats="$2" ;;
    --ranks) ranks_list="$2" ;;
    --lengths) lengths="$2" ;;
    --op) op="$2" ;;
    --iterations) iterations="$2" ;;
    --warmup) warmup="$2" ;;
    --rounds) rounds="$2" ;;
    --inline-longs) inline="$2" ;;
    *) echo "bench.sh: unknown option '$1' (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
  shift 2
done

for tool in mpicc mpirun; do
  if ! command -v "$tool" >/dev/null; then
    echo "bench.sh: $tool not found: install Open MPI with apt-get install openmpi-bin libopenmpi-dev" >&2
    exit 1
  fi
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

jar() { compgen -G "$here/target/kvtier-collective-mpi-*.jar" | grep -v -e '-sources' -e '-tests' | head -1; }
if [[ -z "$(jar)" || ! -d "$here/target/lib" ]]; then
  # package, not install: the jar and target/lib are all this needs, and ~/.m2 stays untouched.
  echo "bench.sh: building collective-mpi (./mvnw -B -q -pl collective-mpi -am package -DskipTests)" >&2
  (cd "$root" && ./mvnw -B -q -o -pl collective-mpi -am package -DskipTests) >&2
fi

out="$here/target/bench"
mkdir -p "$out"
mpicc -O2 -o "$out/mpi_allreduce_latency" "$here/src/main/c/mpi_allreduce_latency.c"
mpicc -O2 -shared -fPIC -DKVTIER_BENCH_LIBRARY -o "$out/libkvtier_mpi_bench.so" \
  "$here/src/main/c/mpi_allreduce_latency.c"

# Open MPI refuses root without these; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_opts=(--oversubscribe --bind-to none --mca btl self,vader)
common=(--iterations "$iterations" --warmup "$warmup" --rounds "$rounds" --lengths "$lengths" --op "$op")
java_opts=(-Xmx256m -XX:+UseSerialGC --enable-native-access=io.kvtier.collective.mpi
  --module-path "$(jar):$here/target/lib"
  -m io.kvtier.collective.mpi/io.kvtier.collective.mpi.internal.MpiAllReduceLatency)

results="$out/results.txt"
: >"$results"
{
  echo "# $(date -u +%FT%TZ) $(mpirun --version 2>/dev/null | head -1); $("$JAVA_HOME/bin/java" -version 2>&1 | head -1)"
  echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); op=$op iterations=$iterations warmup=$warmup rounds=$rounds inline-longs=$inline"
} | tee -a "$results"
for ((repeat = 1; repeat <= repeats; repeat++)); do
  for ranks in $ranks_list; do
    mpirun "${mpirun_opts[@]}" -np "$ranks" "$out/mpi_allreduce_latency" "${common[@]}" \
      | sed "s/^/repeat=$repeat /" | tee -a "$results"
    mpirun "${mpirun_opts[@]}" -np "$ranks" "$JAVA_HOME/bin/java" "${java_opts[@]}" "${common[@]}" \
      --mode c-lib,c-lib-same,collective,collective-into,binding --c-library "$out/libkvtier_mpi_bench.so" \
      --inline-longs "$inline" \
      | sed "s/^/repeat=$repeat /" | tee -a "$results"
  done
done

# Summary per rank count and length: the median over the repeats of each mode's best round, and
# ratios (median, with the spread over the repeats):
#   collective/c-lib    kvtier's allReduce against one C MPI_Allreduce of the same array;
#   into/c-lib          kvtier's allReduceInto (no new array per call) against the same;
#   collective/same-C   against C making the MPI calls the collective makes (c-lib-same): the
#                       frame, plus the array's own MPI_Allreduce when it does not ride in it;
#   binding/c-lib       the bare downcall against C: the cost of java.lang.foreign itself.
awk '
  /^repeat=/ {
    delete kv
    for (i = 1; i <= NF; i++) { if (split($i, p, "=") == 2) kv[p[1]] = p[2] }
    key = kv["ranks"] " " kv["length"]; rep = kv["repeat"]
    best[$2, key, rep] = kv["best_us"]; keys[key] = 1; reps[rep] = 1
    if (kv["inline_longs"] != "") inline = kv["inline_longs"]
    op = kv["op"]
  }
  function median(a, n,    i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function spread(a, n,    i, lo, hi) {
    lo = 1e18; hi = -1e18
    for (i = 1; i <= n; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
    return sprintf("%.2f..%.2f", lo, hi)
  }
  END {
    print ""
    printf "op=%s inline-longs=%s; best-round latencies in microseconds, medians over the repeats\n", op, inline
    print "ranks length      c  c-lib  same-C  collective     into  binding | collective/c-lib  into/c-lib  collective/same-C  binding/c-lib  repeats"
    for (key in keys) {
      n = 0
      split(key, k, " ")
      for (rep in reps) {
        cl = best["c-lib", key, rep]; jc = best["java-collective", key, rep]
        jb = best["java-binding", key, rep]; c = best["c", key, rep]; same = best["c-lib-same", key, rep]
        ji = best["java-collective-into", key, rep]
        if (cl == "" || jc == "" || jb == "" || c == "" || same == "" || ji == "" || cl == 0) continue
        n++; cs[n] = c; cls[n] = cl; jcs[n] = jc; jbs[n] = jb; frs[n] = same; jis[n] = ji
        rc[n] = jc / cl; rs[n] = jc / same; rb[n] = jb / cl; ri[n] = ji / cl
      }
      if (n == 0) continue
      printf "%5s %6s %6.3f %6.3f %7.3f %11.3f %8.3f %8.3f | %5.2f (%s)  %5.2f (%s)  %6.2f (%s)  %4.2f (%s)  %d\n",
        k[1], k[2], median(cs, n), median(cls, n), median(frs, n), median(jcs, n), median(jis, n),
        median(jbs, n), median(rc, n), spread(rc, n), median(ri, n), spread(ri, n),
        median(rs, n), spread(rs, n), median(rb, n), spread(rb, n), n
    }
  }' "$results" | {
  # Three header lines, then the rows by rank count and length.
  for _ in 1 2 3; do IFS= read -r line && echo "$line"; done
  sort -n -k1,1 -k2,2
} | tee -a "$results"
