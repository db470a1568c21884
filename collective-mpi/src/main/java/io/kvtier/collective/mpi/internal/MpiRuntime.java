package io.kvtier.collective.mpi.internal;

import io.kvtier.collective.mpi.MpiConfig;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveSpec;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * MPI in this process: initialized once, on the first join ({@code MPI_Init_thread} asking for
 * {@code MPI_THREAD_SERIALIZED}: any thread may call, one at a time, which {@link MpiCallGate}
 * enforces; if Open MPI provides only {@code FUNNELED}, only the joining thread may call),
 * finalized once, by a JVM shutdown hook, because MPI cannot be initialized again after {@code
 * MPI_Finalize} and a process that exits without it makes {@code mpirun} fail the job.
 *
 * <p>There is one group per process, {@code MPI_COMM_WORLD}: the first join names it, a join under
 * another name is refused, and only one handle is open at a time (a closed handle may be followed
 * by a new join under the same name, on every rank).
 */
public final class MpiRuntime {

  /**
   * The exit code of a job that the watchdog ends with {@code MPI_Abort}: 70, {@code EX_SOFTWARE}
   * of {@code sysexits.h}.
   */
  public static final int WATCHDOG_EXIT_CODE = 70;

  private static final System.Logger LOG = System.getLogger(MpiRuntime.class.getName());

  private static MpiRuntime instance; // guarded by MpiRuntime.class

  private final MpiLibrary library;
  private final MpiLaunch launch;
  private final boolean ownsInitialization;
  private final MpiCallGate gate;
  private final int rank;
  private final int size;
  private String group; // guarded by this
  private boolean warned; // guarded by this
  private volatile MpiCollective open;

  private MpiRuntime(MpiLibrary library, MpiLaunch launch) {
    this.library = library;
    this.launch = launch;
    if (library.finalized()) {
      throw new IllegalStateException(
          "MPI was already finalized in this process, and MPI cannot"
              + " be initialized twice: join the mpi collective before other code finalizes MPI");
    }
    int level;
    if (library.initialized()) {
      // Other code of this process initialized MPI; it owns finalizing it too.
      level = library.queryThread();
      ownsInitialization = false;
    } else {
      level = library.initThread(MpiOpenMpiAbi.THREAD_SERIALIZED);
      ownsInitialization = true;
    }
    if (level < MpiOpenMpiAbi.THREAD_FUNNELED) {
      throw new IllegalStateException(
          "Open MPI provides thread level "
              + level
              + " (MPI_THREAD_SINGLE), but the JVM always runs more than one thread: use an Open MPI"
              + " built with thread support (Debian's is), or initialize MPI with at least"
              + " MPI_THREAD_FUNNELED");
    }
    this.gate =
        new MpiCallGate(level < MpiOpenMpiAbi.THREAD_SERIALIZED ? Thread.currentThread() : null);
    library.setErrorsReturn();
    this.rank = library.worldRank();
    this.size = library.worldSize();
    Runtime.getRuntime()
        .addShutdownHook(Thread.ofPlatform().name("kvtier-mpi-exit").unstarted(this::atExit));
  }

  /**
   * Joins {@code MPI_COMM_WORLD}, initializing MPI on the first call.
   *
   * @param spec the group name, optional world size and rank (checked against MPI's), watchdog
   * @param config the module's configuration
   * @return this process's handle
   * @throws IllegalStateException if Open MPI is unavailable, or a handle is already open
   * @throws IllegalArgumentException if the spec contradicts MPI's world, or names another group
   */
  public static Collective join(CollectiveSpec spec, MpiConfig config) {
    return join(spec, config, null);
  }

  /**
   * Joins with a watchdog action other than ending the job; for tests.
   *
   * @param spec the spec
   * @param config the configuration
   * @param watchdogAction what the watchdog does with its message, or null to end the job
   * @return the handle
   */
  static MpiCollective join(
      CollectiveSpec spec, MpiConfig config, Consumer<String> watchdogAction) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(config, "config");
    return start().joinWorld(spec, config, watchdogAction);
  }

  private static synchronized MpiRuntime start() {
    if (instance == null) {
      MpiProbe probe = MpiProbe.get();
      MpiLibrary library =
          probe
              .library()
              .orElseThrow(
                  () ->
                      new IllegalStateException(
                          "the mpi collective is unavailable: " + probe.availability().reason()));
      instance = new MpiRuntime(library, MpiLaunch.from(System.getenv()));
    }
    return instance;
  }

  private synchronized MpiCollective joinWorld(
      CollectiveSpec spec, MpiConfig config, Consumer<String> watchdogAction) {
    MpiCollective current = open;
    if (current != null) {
      throw new IllegalStateException(
          "this process already has an open mpi collective ("
              + current
              + "): MPI gives one group per process, MPI_COMM_WORLD; close it before"
              + " joining again");
    }
    if (group != null && !group.equals(spec.group())) {
      throw new IllegalArgumentException(
          "the mpi collective has one group per process,"
              + " MPI_COMM_WORLD, which this process joined as '"
              + group
              + "'; a join as '"
              + spec.group()
              + "' is refused: use the same group name for every join");
    }
    String who = "rank " + rank + " of " + size + " in the mpi group '" + spec.group() + "'";
    MpiWatchdog watchdog =
        new MpiWatchdog(
            gate,
            spec.watchdogTimeout(),
            who,
            watchdogAction != null ? watchdogAction : this::abortJob);
    MpiCollective collective =
        new MpiCollective(this, spec.group(), config.inlineLongs(), watchdog);
    try {
      collective.agreeOnJoin(specProblem(spec));
    } catch (RuntimeException e) {
      watchdog.close();
      throw e;
    }
    group = spec.group();
    open = collective;
    if (!launch.launched() && !warned) {
      warned = true;
      LOG.log(System.Logger.Level.WARNING, "mpi collective: " + launch.describe());
    }
    return collective;
  }

  private String specProblem(CollectiveSpec spec) {
    if (spec.worldSize().isPresent() && spec.worldSize().getAsInt() != size) {
      return "the spec of group '"
          + spec.group()
          + "' asks for worldSize="
          + spec.worldSize().getAsInt()
          + " but MPI_COMM_WORLD has "
          + size
          + " ranks (mpirun"
          + " -np "
          + size
          + "): leave worldSize empty to take it from the launcher, or start"
          + " mpirun -np "
          + spec.worldSize().getAsInt();
    }
    if (spec.rank().isPresent() && spec.rank().getAsInt() != rank) {
      return "the spec of group '"
          + spec.group()
          + "' asks for rank="
          + spec.rank().getAsInt()
          + " but MPI made this process rank "
          + rank
          + ": leave rank empty to take it from"
          + " the launcher";
    }
    return null;
  }

  synchronized void release(MpiCollective collective) {
    if (open == collective) {
      open = null;
    }
  }

  /**
   * What the watchdog does by default: print the message where {@code mpirun} shows it, then end
   * every process of the job with {@code MPI_Abort}; if that returned, end this process.
   */
  void abortJob(String message) {
    System.err.println(message);
    System.err.flush();
    try {
      library.abort(WATCHDOG_EXIT_CODE);
    } catch (RuntimeException e) {
      System.err.println("kvtier mpi: MPI_Abort failed (" + e + "); halting this process");
    }
    Runtime.getRuntime().halt(WATCHDOG_EXIT_CODE);
  }

  /** The exit hook: reports an open collective, then finalizes MPI unless a call is running. */
  private void atExit() {
    MpiCollective current = open;
    if (current != null) {
      System.err.println(
          "kvtier mpi: rank "
              + rank
              + " of "
              + size
              + " exits with its"
              + " collective still open ("
              + current
              + "); recent calls, oldest first: "
              + gate.describeRecent());
    }
    if (!ownsInitialization) {
      return;
    }
    if (!gate.enterForever(new MpiCall(MpiCall.Kind.FINALIZE, 0, "exit", -1))) {
      System.err.println(
          "kvtier mpi: rank "
              + rank
              + " skips MPI_Finalize at exit because a"
              + " thread is still inside "
              + gate.current());
      return;
    }
    try {
      library.finalizeMpi();
    } catch (RuntimeException e) {
      System.err.println("kvtier mpi: rank " + rank + ": " + e.getMessage());
    }
  }

  MpiLibrary library() {
    return library;
  }

  MpiCallGate gate() {
    return gate;
  }

  int rank() {
    return rank;
  }

  int size() {
    return size;
  }
}
