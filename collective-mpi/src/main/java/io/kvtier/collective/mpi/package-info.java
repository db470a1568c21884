/**
 * The {@code mpi} collective provider: ranks are the processes of an Open MPI job, reached through
 * a {@code java.lang.foreign} binding. See {@link io.kvtier.collective.mpi.MpiCollectiveProvider}.
 */
package io.kvtier.collective.mpi;
