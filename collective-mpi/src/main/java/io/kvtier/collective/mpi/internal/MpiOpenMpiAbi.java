package io.kvtier.collective.mpi.internal;

import java.util.List;

/**
 * What the binding assumes about Open MPI's application binary interface (ABI). Everything that
 * ties {@link MpiLibrary} to Open MPI, rather than to the MPI standard, is named here.
 *
 * <p>The MPI standard fixes the C API (function names and argument meanings) but, before MPI 5.0,
 * not the ABI: the types of the handles ({@code MPI_Comm}, {@code MPI_Datatype}, {@code MPI_Op},
 * {@code MPI_Errhandler}) and the values of the predefined handles ({@code MPI_COMM_WORLD}, {@code
 * MPI_INT64_T}, {@code MPI_MIN}) are each implementation's own, defined as macros in its {@code
 * mpi.h}. A binding without a C compiler must reproduce them:
 *
 * <ul>
 *   <li><b>Open MPI</b> (this binding, {@code libmpi.so.40} of Open MPI 3.x to 5.x): a handle is a
 *       pointer to a struct, and each predefined handle is the address of an exported global,
 *       for example {@code #define MPI_COMM_WORLD ((MPI_Comm) &ompi_mpi_comm_world)}. So the
 *       binding looks these symbols up in the library ({@link #COMM_WORLD}, ...) and passes their
 *       addresses as {@code ADDRESS} arguments. Checked on Debian's Open MPI 4.1.4 with {@code nm
 *       -D libmpi.so.40}. The thread-level values are the order of the {@code enum} in {@code
 *       mpi.h}; {@code MPI_SUCCESS} is 0 everywhere.
 *   <li><b>MPICH</b> and its derivatives (Intel MPI, MVAPICH, Cray MPICH; {@code libmpi.so.12}):
 *       a handle is a 32-bit {@code int}, and the predefined handles are integer constants in
 *       {@code mpi.h} ({@code MPI_COMM_WORLD = 0x44000000}, {@code MPI_INT64_T = 0x4c00083a},
 *       {@code MPI_MIN = 0x58000002}, {@code MPI_ERRORS_RETURN = 0x54000001}), not symbols. An
 *       MPICH binding would declare the handle parameters as {@code JAVA_INT} in its function
 *       descriptors, take the constants from a table per MPICH ABI version, and look up the same
 *       function names. The rest of this module (frame protocol, watchdog, runtime) would not
 *       change: it sees the library only through {@link MpiLibrary}'s methods.
 *   <li><b>MPI 5.0's standard ABI</b> ({@code libmpi_abi.so}, in MPICH 4.2+ and in progress in
 *       Open MPI) will fix handle types and constant values for every implementation; a binding
 *       to it would replace this class with the standard's table.
 * </ul>
 *
 * <p>The binding refuses a {@code libmpi.so} that lacks {@link #COMM_WORLD} (an MPICH build),
 * naming this ABI mismatch, instead of passing wrong handles to it.
 */
final class MpiOpenMpiAbi {

  /** The library names probed, in order: Open MPI's soname, then the development link. */
  static final List<String> LIBRARY_NAMES = List.of("libmpi.so.40", "libmpi.so");

  /** The Debian/Ubuntu packages that provide the library and the {@code mpirun} launcher. */
  static final String PACKAGES = "openmpi-bin libopenmpi-dev";

  /** {@code MPI_COMM_WORLD}. */
  static final String COMM_WORLD = "ompi_mpi_comm_world";

  /**
   * {@code MPI_INT64_T}: exactly a Java {@code long} on every platform, unlike {@code MPI_LONG}
   * (which is 64 bits only on LP64 systems).
   */
  static final String INT64 = "ompi_mpi_int64_t";

  /** {@code MPI_BYTE}, for broadcast payloads. */
  static final String BYTE = "ompi_mpi_byte";

  /** {@code MPI_MIN}. */
  static final String OP_MIN = "ompi_mpi_op_min";

  /** {@code MPI_MAX}. */
  static final String OP_MAX = "ompi_mpi_op_max";

  /** {@code MPI_SUM}. */
  static final String OP_SUM = "ompi_mpi_op_sum";

  /** {@code MPI_ERRORS_RETURN}: failed calls return an error code instead of aborting. */
  static final String ERRORS_RETURN = "ompi_mpi_errors_return";

  /** {@code MPI_SUCCESS}. */
  static final int SUCCESS = 0;

  /** {@code MPI_THREAD_FUNNELED}: only the thread that initialized MPI calls it. */
  static final int THREAD_FUNNELED = 1;

  /** {@code MPI_THREAD_SERIALIZED}: any thread calls MPI, one at a time. */
  static final int THREAD_SERIALIZED = 2;

  /** {@code MPI_MAX_ERROR_STRING} of Open MPI ({@code OPAL_MAX_ERROR_STRING}). */
  static final int MAX_ERROR_STRING = 256;

  /** {@code MPI_MAX_LIBRARY_VERSION_STRING} of Open MPI. */
  static final int MAX_LIBRARY_VERSION_STRING = 256;

  /**
   * Environment variables that Open MPI's launcher ({@code mpirun}, or a PMIx-enabled resource
   * manager such as Slurm's {@code srun}) sets in every process it starts.
   */
  static final List<String> LAUNCHER_VARIABLES = List.of("OMPI_COMM_WORLD_SIZE", "PMIX_RANK");

  private MpiOpenMpiAbi() {}
}
