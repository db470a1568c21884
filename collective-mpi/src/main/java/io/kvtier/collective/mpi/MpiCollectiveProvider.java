package io.kvtier.collective.mpi;

import io.kvtier.collective.mpi.internal.MpiProbe;
import io.kvtier.collective.mpi.internal.MpiRuntime;
import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/**
 * The {@code mpi} collective: one rank per process, started by Open MPI's {@code mpirun}, meeting
 * in {@code MPI_COMM_WORLD} through a {@code java.lang.foreign} binding to {@code libmpi.so.40}.
 *
 * <p><b>Running it.</b> Install Open MPI ({@code apt-get install openmpi-bin libopenmpi-dev}),
 * put this module on the module path and give it native access: {@code mpirun -np 4 java
 * --enable-native-access=io.kvtier.collective.mpi ...}. Started without {@code mpirun}, a process
 * is a single rank (availability says so, and joining logs a warning).
 *
 * <p><b>Group.</b> World size and rank come from MPI; a spec that states them must agree (else
 * {@link IllegalArgumentException} on every rank). There is one group per process, {@code
 * MPI_COMM_WORLD}: a join under another group name is refused.
 *
 * <p><b>Desync.</b> Every call starts with an {@code MPI_Allreduce(MIN)} of the call's
 * fingerprint (operation, length or root, tag, sequence number) and its complement (the MIN and
 * the MAX in one reduction), whose shape is the same on every rank (it depends only on calls all
 * ranks agreed on), so a desync is a {@link io.kvtier.spi.CollectiveDesyncException} on every
 * rank, not a hang. The same reduction carries MIN/MAX payloads of up to {@code mpi.inline-longs}
 * values and a broadcast's size: once a call site has been seen, such a MIN or MAX costs one
 * {@code MPI_Allreduce}; a SUM costs two.
 *
 * <p><b>Watchdog.</b> MPI calls block in C and cannot be cancelled. A call that takes longer than
 * the spec's watchdog timeout prints this rank's recent calls and ends the whole job with {@code
 * MPI_Abort} (exit code 70); each other rank prints its own recent calls as it is terminated. So
 * a rank that never arrives ends the job loudly instead of hanging it; no {@link
 * io.kvtier.spi.CollectiveTimeoutException} is thrown, because no rank could continue after it.
 *
 * <p><b>Threads.</b> One thread at a time may call (MPI_THREAD_SERIALIZED); overlapping calls
 * are an {@link IllegalStateException}. MPI is finalized once, at JVM exit.
 */
@ProviderName("mpi")
public final class MpiCollectiveProvider implements CollectiveProvider {

  /** Creates the provider; does no work (the library is probed by {@link #availability()}). */
  public MpiCollectiveProvider() {}

  @Override
  public String name() {
    return "mpi";
  }

  /**
   * Probes for Open MPI's library (once per JVM) without initializing MPI: unavailable, with the
   * package to install, when it is missing or is not Open MPI; available as a single rank, with
   * a warning in the reason, when the process was not started by {@code mpirun}.
   *
   * @return the availability; never throws
   */
  @Override
  public Availability availability() {
    return MpiProbe.get().availability();
  }

  /**
   * Reads the {@code mpi.*} keys.
   *
   * @return {@value MpiConfig#NAMESPACE}
   */
  @Override
  public String configNamespace() {
    return MpiConfig.NAMESPACE;
  }

  /**
   * Joins {@code MPI_COMM_WORLD}, initializing MPI on first use; a collective call of every rank
   * (the ranks agree on the group name, the configuration and the spec).
   *
   * @throws IllegalArgumentException on an unknown {@code mpi.*} key, a spec that contradicts
   *     MPI's world size or rank, or a group name other than this process's first
   * @throws IllegalStateException if Open MPI is unavailable or a handle is already open
   */
  @Override
  public Collective join(CollectiveSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    MpiConfig config = MpiConfig.fromProperties(context.properties());
    return MpiRuntime.join(spec, config);
  }
}
