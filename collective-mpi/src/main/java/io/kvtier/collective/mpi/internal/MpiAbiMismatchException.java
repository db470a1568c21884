package io.kvtier.collective.mpi.internal;

/**
 * A library named like Open MPI's {@code libmpi} lacks a symbol of Open MPI's ABI: it is another
 * MPI implementation or an unsupported version. The probe reports it as the reason the provider
 * is unavailable.
 */
final class MpiAbiMismatchException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message the library, the missing symbol and the fix
   */
  MpiAbiMismatchException(String message) {
    super(message);
  }
}
