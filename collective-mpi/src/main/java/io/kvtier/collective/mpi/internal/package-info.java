/**
 * The Open MPI binding, the process-wide MPI runtime, the guard frame, the call gate and the
 * watchdog. Not exported.
 */
package io.kvtier.collective.mpi.internal;
