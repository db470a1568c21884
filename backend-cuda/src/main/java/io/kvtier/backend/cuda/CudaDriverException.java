package io.kvtier.backend.cuda;

/**
 * A CUDA driver call failed. The message names the call, the driver's error name and what to
 * check; {@link #result()} is the raw {@code CUresult}.
 */
public final class CudaDriverException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int result;

  /**
   * Creates the exception.
   *
   * @param message the call, the error and the fix
   * @param result the {@code CUresult} the driver returned
   */
  public CudaDriverException(String message, int result) {
    super(message);
    this.result = result;
  }

  /**
   * The driver's result code.
   *
   * @return the {@code CUresult}, for example 2 for {@code CUDA_ERROR_OUT_OF_MEMORY}
   */
  public int result() {
    return result;
  }
}
