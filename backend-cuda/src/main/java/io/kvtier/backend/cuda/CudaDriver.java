package io.kvtier.backend.cuda;

import java.util.HashMap;
import java.util.Map;
import java.util.function.IntSupplier;
import jcuda.CudaException;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/**
 * The one place that loads JCuda and turns driver results into exceptions. Only classes that a
 * pool's {@code open} reaches use it, so JCuda's native library loads when the first pool is
 * opened and never for an availability probe.
 *
 * <p>Every call goes through {@link #result} or {@link #check}: this backend reads each
 * {@code CUresult} itself and disables JCuda's exceptions, but JCuda's switch is global to the
 * JVM, and other code may turn it on again; a {@link CudaException} is then mapped back to its
 * result, so that polling for {@code CUDA_ERROR_NOT_READY} never throws.
 */
final class CudaDriver {

  /** {@code CUDA_SUCCESS}. */
  static final int SUCCESS = CUresult.CUDA_SUCCESS;

  /** {@code CUDA_ERROR_NOT_READY}: an event or stream query before the work finished. */
  static final int NOT_READY = CUresult.CUDA_ERROR_NOT_READY;

  /** {@code CUDA_ERROR_OUT_OF_MEMORY}. */
  static final int OUT_OF_MEMORY = CUresult.CUDA_ERROR_OUT_OF_MEMORY;

  /** The highest CUresult code mapped back from an exception's message. */
  private static final int LAST_RESULT = 1000;

  /** Loads JCuda on first use; holds the failure, if any, for every later open. */
  private static final class Loaded {
    static final RuntimeException FAILURE = load();
  }

  /** Result name to code, for the messages of JCuda's exceptions; built on first need. */
  private static final class Names {
    static final Map<String, Integer> CODES = codes();
  }

  private CudaDriver() {}

  /**
   * Loads JCuda's native library and initializes the driver, once per JVM.
   *
   * @throws IllegalStateException naming what is missing and the fix
   */
  static void ensureLoaded() {
    if (Loaded.FAILURE != null) {
      throw Loaded.FAILURE;
    }
  }

  private static RuntimeException load() {
    String libraryPath = System.getProperty("java.library.path");
    try {
      JCudaDriver.setExceptionsEnabled(false);
    } catch (LinkageError e) {
      String where =
          CudaNatives.locate(libraryPath)
              .map(found -> "it was found at " + found + " but did not load: " + e)
              .orElse(CudaNatives.missingReason(libraryPath));
      return new IllegalStateException(
          "JCuda cannot load its native library " + CudaNatives.fileName() + ": " + where, e);
    }
    try {
      check("cuInit(0)", () -> JCudaDriver.cuInit(0));
      return null;
    } catch (CudaDriverException e) {
      return new IllegalStateException(
          "the CUDA driver did not initialize through JCuda: " + e.getMessage(), e);
    }
  }

  /**
   * Makes a driver call and returns its result, also when JCuda throws it as an exception.
   *
   * @param call the call
   * @return its {@code CUresult}
   */
  static int result(IntSupplier call) {
    try {
      return call.getAsInt();
    } catch (CudaException e) {
      return Names.CODES.getOrDefault(e.getMessage(), CUresult.CUDA_ERROR_UNKNOWN);
    }
  }

  /**
   * Makes a driver call and throws unless it succeeded.
   *
   * @param what the call with its arguments, for the message
   * @param call the call
   * @throws CudaDriverException naming the call and the error
   */
  static void check(String what, IntSupplier call) {
    int result = result(call);
    if (result != SUCCESS) {
      throw failure(what, result);
    }
  }

  /**
   * The exception of a failed call.
   *
   * @param what the call
   * @param result its result
   * @return the exception, with a hint where one helps
   */
  static CudaDriverException failure(String what, int result) {
    String hint =
        switch (result) {
          case CUresult.CUDA_ERROR_OUT_OF_MEMORY -> ": use fewer pages, or free memory on the GPU";
          case CUresult.CUDA_ERROR_ILLEGAL_ADDRESS, CUresult.CUDA_ERROR_LAUNCH_FAILED ->
              ": the context is unusable now; restart the process";
          case CUresult.CUDA_ERROR_INVALID_CONTEXT, CUresult.CUDA_ERROR_CONTEXT_IS_DESTROYED ->
              ": was the pool closed?";
          default -> "";
        };
    return new CudaDriverException(what + " returned " + name(result) + hint, result);
  }

  /**
   * The name of a result.
   *
   * @param result the {@code CUresult}
   * @return for example {@code CUDA_ERROR_OUT_OF_MEMORY (2)}
   */
  static String name(int result) {
    return CUresult.stringFor(result) + " (" + result + ")";
  }

  private static Map<String, Integer> codes() {
    Map<String, Integer> codes = new HashMap<>();
    for (int code = LAST_RESULT; code >= 0; code--) {
      codes.put(CUresult.stringFor(code), code);
    }
    return codes;
  }
}
