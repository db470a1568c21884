package io.kvtier.collective.mpi.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.kvtier.collective.mpi.MpiException;
import io.kvtier.spi.ReduceOp;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A thin binding to the few functions of Open MPI's C library that the collective needs, through
 * {@code java.lang.foreign} downcalls on {@code MPI_COMM_WORLD}. Handles are the addresses of Open
 * MPI's exported globals (see {@link MpiOpenMpiAbi} for what that ties the binding to).
 *
 * <p>Every function that returns an MPI error code is checked: a code other than {@code
 * MPI_SUCCESS} becomes an {@link MpiException} with {@code MPI_Error_string}'s text. That needs
 * {@link #setErrorsReturn()} first; before it, Open MPI's default handler aborts the job on an
 * error.
 *
 * <p>Not thread-safe by itself: MPI is initialized with {@code MPI_THREAD_SERIALIZED}, so callers
 * ({@link MpiCallGate}) let one thread call at a time. Buffers are off-heap segments, because a
 * blocking MPI call must not pin a Java heap array (a "critical" downcall would stall the garbage
 * collector for as long as another rank makes this one wait).
 */
final class MpiLibrary {

  private static final Linker LINKER = Linker.nativeLinker();

  private final String name;
  private final MemorySegment commWorld;
  private final MemorySegment int64;
  private final MemorySegment byteType;
  private final MemorySegment opMin;
  private final MemorySegment opMax;
  private final MemorySegment opSum;
  private final MemorySegment errorsReturn;

  private final MethodHandle initThread;
  private final MethodHandle initialized;
  private final MethodHandle finalized;
  private final MethodHandle queryThread;
  private final MethodHandle commRank;
  private final MethodHandle commSize;
  private final MethodHandle commSetErrhandler;
  private final MethodHandle allreduce;
  private final MethodHandle bcast;
  private final MethodHandle barrier;
  private final MethodHandle finalizeMpi;
  private final MethodHandle abort;
  private final MethodHandle errorString;
  private final MethodHandle libraryVersion;

  /**
   * Opens the library and resolves every symbol the binding uses.
   *
   * @param name the library name for {@code dlopen} (searched on the loader's path)
   * @throws IllegalArgumentException if the library cannot be loaded
   * @throws MpiAbiMismatchException if it lacks a symbol (not Open MPI, or too old)
   */
  // Loading a library and linking downcalls are restricted methods: the module needs native
  // access (--enable-native-access=io.kvtier.collective.mpi), which the provider's docs require.
  @SuppressWarnings("restricted")
  MpiLibrary(String name) {
    this.name = Objects.requireNonNull(name, "name");
    // The global arena keeps the library loaded for the life of the JVM: MPI cannot be unloaded
    // and re-initialized anyway.
    SymbolLookup lookup = SymbolLookup.libraryLookup(name, Arena.global());
    Symbols symbols = new Symbols(name, lookup);
    commWorld = symbols.find(MpiOpenMpiAbi.COMM_WORLD);
    int64 = symbols.find(MpiOpenMpiAbi.INT64);
    byteType = symbols.find(MpiOpenMpiAbi.BYTE);
    opMin = symbols.find(MpiOpenMpiAbi.OP_MIN);
    opMax = symbols.find(MpiOpenMpiAbi.OP_MAX);
    opSum = symbols.find(MpiOpenMpiAbi.OP_SUM);
    errorsReturn = symbols.find(MpiOpenMpiAbi.ERRORS_RETURN);
    initThread = symbols.function("MPI_Init_thread", JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS);
    initialized = symbols.function("MPI_Initialized", JAVA_INT, ADDRESS);
    finalized = symbols.function("MPI_Finalized", JAVA_INT, ADDRESS);
    queryThread = symbols.function("MPI_Query_thread", JAVA_INT, ADDRESS);
    commRank = symbols.function("MPI_Comm_rank", JAVA_INT, ADDRESS, ADDRESS);
    commSize = symbols.function("MPI_Comm_size", JAVA_INT, ADDRESS, ADDRESS);
    commSetErrhandler = symbols.function("MPI_Comm_set_errhandler", JAVA_INT, ADDRESS, ADDRESS);
    allreduce =
        symbols.function(
            "MPI_Allreduce", JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
    bcast = symbols.function("MPI_Bcast", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS);
    barrier = symbols.function("MPI_Barrier", JAVA_INT, ADDRESS);
    finalizeMpi = symbols.function("MPI_Finalize", JAVA_INT);
    abort = symbols.function("MPI_Abort", JAVA_INT, ADDRESS, JAVA_INT);
    errorString = symbols.function("MPI_Error_string", JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
    libraryVersion = symbols.function("MPI_Get_library_version", JAVA_INT, ADDRESS, ADDRESS);
  }

  /** Resolves symbols of one library, naming the library and the ABI in failures. */
  private record Symbols(String library, SymbolLookup lookup) {
    MemorySegment find(String symbol) {
      return lookup
          .find(symbol)
          .orElseThrow(
              () ->
                  new MpiAbiMismatchException(
                      library
                          + " has no symbol "
                          + symbol
                          + ": it is not Open MPI's libmpi (an MPICH build has"
                          + " integer handles instead), or a version older than Open MPI 3; install Open MPI"
                          + " (apt-get install "
                          + MpiOpenMpiAbi.PACKAGES
                          + ") or put its lib directory on"
                          + " LD_LIBRARY_PATH"));
    }

    @SuppressWarnings("restricted")
    MethodHandle function(String symbol, MemoryLayout result, MemoryLayout... arguments) {
      return LINKER.downcallHandle(find(symbol), FunctionDescriptor.of(result, arguments));
    }
  }

  /**
   * The library name that was loaded.
   *
   * @return for example {@code libmpi.so.40}
   */
  String name() {
    return name;
  }

  /**
   * {@code MPI_Get_library_version}; callable before {@code MPI_Init}.
   *
   * @return the first line of the version string, for example {@code Open MPI v4.1.4, ...}
   */
  String libraryVersion() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment text = arena.allocate(MpiOpenMpiAbi.MAX_LIBRARY_VERSION_STRING);
      MemorySegment length = arena.allocate(JAVA_INT);
      check((int) libraryVersion.invokeExact(text, length), "MPI_Get_library_version");
      String version = string(text, length.get(JAVA_INT, 0));
      // Open MPI counts the terminating NUL in the length it reports.
      int nul = version.indexOf('\0');
      if (nul >= 0) {
        version = version.substring(0, nul);
      }
      int newline = version.indexOf('\n');
      return (newline >= 0 ? version.substring(0, newline) : version).strip();
    } catch (MpiException e) {
      throw e;
    } catch (Throwable t) {
      throw downcallFailed("MPI_Get_library_version", t);
    }
  }

  /**
   * {@code MPI_Init_thread(NULL, NULL, required, &provided)}.
   *
   * @param required the thread level asked for
   * @return the level provided
   */
  int initThread(int required) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment provided = arena.allocate(JAVA_INT);
      int rc =
          (int) initThread.invokeExact(MemorySegment.NULL, MemorySegment.NULL, required, provided);
      check(rc, "MPI_Init_thread");
      return provided.get(JAVA_INT, 0);
    } catch (MpiException e) {
      throw e;
    } catch (Throwable t) {
      throw downcallFailed("MPI_Init_thread", t);
    }
  }

  /**
   * {@code MPI_Initialized}.
   *
   * @return whether MPI has been initialized in this process
   */
  boolean initialized() {
    return flag(initialized, "MPI_Initialized");
  }

  /**
   * {@code MPI_Finalized}.
   *
   * @return whether MPI has been finalized in this process
   */
  boolean finalized() {
    return flag(finalized, "MPI_Finalized");
  }

  /**
   * {@code MPI_Query_thread}, for a process where other code initialized MPI.
   *
   * @return the thread level MPI provides
   */
  int queryThread() {
    return intOut(queryThread, "MPI_Query_thread");
  }

  /**
   * {@code MPI_Comm_rank(MPI_COMM_WORLD)}.
   *
   * @return this process's rank
   */
  int worldRank() {
    return intOut(commRank, "MPI_Comm_rank");
  }

  /**
   * {@code MPI_Comm_size(MPI_COMM_WORLD)}.
   *
   * @return the number of processes
   */
  int worldSize() {
    return intOut(commSize, "MPI_Comm_size");
  }

  /** {@code MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)}. */
  void setErrorsReturn() {
    try {
      check(
          (int) commSetErrhandler.invokeExact(commWorld, errorsReturn), "MPI_Comm_set_errhandler");
    } catch (MpiException e) {
      throw e;
    } catch (Throwable t) {
      throw downcallFailed("MPI_Comm_set_errhandler", t);
    }
  }

  /**
   * {@code MPI_Allreduce} of 64-bit integers on {@code MPI_COMM_WORLD}.
   *
   * @param send {@code count} longs of this rank
   * @param receive where the {@code count} reduced longs go; distinct from {@code send}
   * @param count the number of longs
   * @param op the reduction
   */
  void allReduce(MemorySegment send, MemorySegment receive, int count, ReduceOp op) {
    MemorySegment mpiOp =
        switch (op) {
          case MIN -> opMin;
          case MAX -> opMax;
          case SUM -> opSum;
        };
    int rc;
    try {
      rc = (int) allreduce.invokeExact(send, receive, count, int64, mpiOp, commWorld);
    } catch (Throwable t) {
      throw downcallFailed("MPI_Allreduce", t);
    }
    check(rc, "MPI_Allreduce");
  }

  /**
   * {@code MPI_Bcast} of bytes on {@code MPI_COMM_WORLD}.
   *
   * @param buffer the root's bytes on the root; where they land on the others
   * @param count the number of bytes
   * @param root the sending rank
   */
  void broadcastBytes(MemorySegment buffer, int count, int root) {
    broadcast(buffer, count, byteType, root);
  }

  /**
   * {@code MPI_Bcast} of 64-bit integers on {@code MPI_COMM_WORLD}.
   *
   * @param buffer the root's longs on the root; where they land on the others
   * @param count the number of longs
   * @param root the sending rank
   */
  void broadcastLongs(MemorySegment buffer, int count, int root) {
    broadcast(buffer, count, int64, root);
  }

  private void broadcast(MemorySegment buffer, int count, MemorySegment type, int root) {
    int rc;
    try {
      rc = (int) bcast.invokeExact(buffer, count, type, root, commWorld);
    } catch (Throwable t) {
      throw downcallFailed("MPI_Bcast", t);
    }
    check(rc, "MPI_Bcast");
  }

  /** {@code MPI_Barrier(MPI_COMM_WORLD)}. */
  void barrier() {
    int rc;
    try {
      rc = (int) barrier.invokeExact(commWorld);
    } catch (Throwable t) {
      throw downcallFailed("MPI_Barrier", t);
    }
    check(rc, "MPI_Barrier");
  }

  /** {@code MPI_Finalize}. */
  void finalizeMpi() {
    try {
      check((int) finalizeMpi.invokeExact(), "MPI_Finalize");
    } catch (MpiException e) {
      throw e;
    } catch (Throwable t) {
      throw downcallFailed("MPI_Finalize", t);
    }
  }

  /**
   * {@code MPI_Abort(MPI_COMM_WORLD, code)}: terminates every process of the job. Open MPI does
   * not return from it; if it ever did, the caller must end the process itself.
   *
   * @param code the exit code the launcher reports
   */
  void abort(int code) {
    try {
      int ignored = (int) abort.invokeExact(commWorld, code);
    } catch (Throwable t) {
      throw downcallFailed("MPI_Abort", t);
    }
  }

  /**
   * {@code MPI_Error_string}.
   *
   * @param code an MPI error code
   * @return Open MPI's description, or a placeholder if that call fails too
   */
  String errorString(int code) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment text = arena.allocate(MpiOpenMpiAbi.MAX_ERROR_STRING);
      MemorySegment length = arena.allocate(JAVA_INT);
      int rc = (int) errorString.invokeExact(code, text, length);
      if (rc != MpiOpenMpiAbi.SUCCESS) {
        return "(no description: MPI_Error_string failed with code " + rc + ")";
      }
      return string(text, length.get(JAVA_INT, 0));
    } catch (Throwable t) {
      return "(no description: " + t + ")";
    }
  }

  private void check(int rc, String function) {
    if (rc != MpiOpenMpiAbi.SUCCESS) {
      throw new MpiException(function, rc, errorString(rc));
    }
  }

  private boolean flag(MethodHandle function, String functionName) {
    return intOut(function, functionName) != 0;
  }

  private int intOut(MethodHandle function, String functionName) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(JAVA_INT);
      int rc =
          function.type().parameterCount() == 2
              ? (int) function.invokeExact(commWorld, out)
              : (int) function.invokeExact(out);
      check(rc, functionName);
      return out.get(JAVA_INT, 0);
    } catch (MpiException e) {
      throw e;
    } catch (Throwable t) {
      throw downcallFailed(functionName, t);
    }
  }

  private static String string(MemorySegment text, int length) {
    int n = (int) Math.max(0, Math.min(length, text.byteSize()));
    byte[] bytes = text.asSlice(0, n).toArray(JAVA_BYTE);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private static IllegalStateException downcallFailed(String function, Throwable t) {
    if (t instanceof Error e) {
      throw e;
    }
    return new IllegalStateException("the downcall to " + function + " failed: " + t, t);
  }

  @Override
  public String toString() {
    return "MpiLibrary[" + name + "]";
  }
}
