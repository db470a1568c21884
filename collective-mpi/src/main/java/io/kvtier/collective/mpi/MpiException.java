package io.kvtier.collective.mpi;

import io.kvtier.spi.CollectiveException;
import java.util.Objects;

/**
 * An MPI function returned an error code. The communicator's error handler is {@code
 * MPI_ERRORS_RETURN}, so failures come back as codes; the binding turns each into this exception
 * with Open MPI's own description ({@code MPI_Error_string}). The collective that saw it is
 * broken: every later call on it throws.
 */
public final class MpiException extends CollectiveException {
  private static final long serialVersionUID = 1L;

  private final String function;
  private final int errorCode;

  /**
   * Creates the exception.
   *
   * @param function the MPI function that failed, for example {@code "MPI_Allreduce"}
   * @param errorCode the code it returned
   * @param description {@code MPI_Error_string} of the code, and what the caller was doing
   */
  public MpiException(String function, int errorCode, String description) {
    super(
        Objects.requireNonNull(function, "function")
            + " failed with MPI error code "
            + errorCode
            + ": "
            + Objects.requireNonNull(description, "description"),
        null);
    this.function = function;
    this.errorCode = errorCode;
  }

  /**
   * The MPI function that failed.
   *
   * @return its C name
   */
  public String function() {
    return function;
  }

  /**
   * The error code the function returned.
   *
   * @return the code, never {@code MPI_SUCCESS} (0)
   */
  public int errorCode() {
    return errorCode;
  }
}
