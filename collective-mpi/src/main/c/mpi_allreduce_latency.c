/*
 * The C side of collective-mpi/bench.sh: per-call latency of MPI_Allreduce on MPI_INT64_T, the
 * same call the Java binding makes, measured the same way as
 * io.kvtier.collective.mpi.internal.MpiAllReduceLatency (warmup, then rounds of timed
 * iterations; rank 0 prints the best and the median round).
 *
 * Built two ways by bench.sh:
 *   a program:        mpicc -O2 -o mpi_allreduce_latency mpi_allreduce_latency.c
 *                     mpirun -np 2 ./mpi_allreduce_latency --iterations 10000 --warmup 50000 \
 *                         --rounds 15 --lengths 1,64 --op MIN
 *   a shared library: mpicc -O2 -shared -fPIC -DKVTIER_BENCH_LIBRARY \
 *                         -o libkvtier_mpi_bench.so mpi_allreduce_latency.c
 *     whose kvtier_c_allreduce_round() and kvtier_c_allreduce_pair_round() the Java benchmark
 *     calls in the same processes, its C rounds interleaved with the Java rounds, so that on a
 *     busy machine both see the same load.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LENGTHS 16
#define MAX_ROUNDS 1000

/* One timed round: the per-call latency in microseconds of `iterations` calls. */
static double timed_round(const int64_t *in, int64_t *out, int length, long iterations, MPI_Op op) {
  double start = MPI_Wtime();
  for (long i = 0; i < iterations; i++) {
    MPI_Allreduce(in, out, length, MPI_INT64_T, op, MPI_COMM_WORLD);
  }
  return (MPI_Wtime() - start) / iterations * 1e6;
}

#ifdef KVTIER_BENCH_LIBRARY

/*
 * One round for the Java benchmark, on buffers it allocated; MPI is initialized by the JVM.
 * op: 0 MIN, 1 MAX, 2 SUM (ReduceOp's order). Returns microseconds per call.
 */
double kvtier_c_allreduce_round(const int64_t *in, int64_t *out, int length, long iterations,
    int op) {
  return timed_round(in, out, length, iterations, op == 1 ? MPI_MAX : op == 2 ? MPI_SUM : MPI_MIN);
}

/*
 * One round of the MPI calls kvtier's collective makes for an array that does not ride in its
 * guard frame: MPI_Allreduce(MIN) of the frame, then of the array. Returns microseconds per pair.
 */
double kvtier_c_allreduce_pair_round(const int64_t *frame_in, int64_t *frame_out,
    int frame_length, const int64_t *in, int64_t *out, int length, long iterations, int op) {
  MPI_Op mpi_op = op == 1 ? MPI_MAX : op == 2 ? MPI_SUM : MPI_MIN;
  double start = MPI_Wtime();
  for (long i = 0; i < iterations; i++) {
    MPI_Allreduce(frame_in, frame_out, frame_length, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(in, out, length, MPI_INT64_T, mpi_op, MPI_COMM_WORLD);
  }
  return (MPI_Wtime() - start) / iterations * 1e6;
}

#else

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static void usage_and_exit(const char *bad) {
  fprintf(stderr, "mpi_allreduce_latency: bad argument '%s'; usage: --iterations N --warmup N"
      " --rounds N --lengths A,B,... --op MIN|MAX|SUM\n", bad);
  exit(2);
}

int main(int argc, char **argv) {
  long iterations = 20000, warmup = 20000;
  int rounds = 7, lengths[MAX_LENGTHS] = {1, 64}, nlengths = 2;
  const char *op_name = "MIN";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--iterations") == 0) {
      iterations = atol(argv[i + 1]);
    } else if (strcmp(argv[i], "--warmup") == 0) {
      warmup = atol(argv[i + 1]);
    } else if (strcmp(argv[i], "--rounds") == 0) {
      rounds = atoi(argv[i + 1]);
    } else if (strcmp(argv[i], "--lengths") == 0) {
      nlengths = 0;
      for (char *t = strtok(argv[i + 1], ","); t != NULL && nlengths < MAX_LENGTHS;
           t = strtok(NULL, ",")) {
        lengths[nlengths++] = atoi(t);
      }
    } else if (strcmp(argv[i], "--op") == 0) {
      op_name = argv[i + 1];
    } else {
      usage_and_exit(argv[i]);
    }
  }
  if (iterations < 1 || warmup < 0 || rounds < 1 || rounds > MAX_ROUNDS) {
    usage_and_exit("counts");
  }
  MPI_Op op = strcmp(op_name, "MAX") == 0 ? MPI_MAX : strcmp(op_name, "SUM") == 0 ? MPI_SUM
      : MPI_MIN;

  int provided, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  for (int k = 0; k < nlengths; k++) {
    int n = lengths[k];
    int64_t *in = malloc(sizeof(int64_t) * (n > 0 ? n : 1));
    int64_t *out = malloc(sizeof(int64_t) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++) {
      in[i] = (int64_t) rank * 1000 + i;
    }
    for (long i = 0; i < warmup; i++) {
      MPI_Allreduce(in, out, n, MPI_INT64_T, op, MPI_COMM_WORLD);
    }
    double per_call[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      per_call[r] = timed_round(in, out, n, iterations, op);
    }
    qsort(per_call, rounds, sizeof(double), compare_doubles);
    if (rank == 0) {
      printf("c ranks=%d op=%s length=%d iterations=%ld best_us=%.3f median_us=%.3f\n", size,
          op_name, n, iterations, per_call[0], per_call[rounds / 2]);
      fflush(stdout);
    }
    free(in);
    free(out);
  }
  MPI_Finalize();
  return 0;
}

#endif
