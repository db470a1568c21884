package io.kvtier.core.cache;

/** A token id outside the vocabulary {@code [0, vocabSize)}. */
public class InvalidTokenException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param token the bad id
   * @param index its index in the array
   * @param vocabSize the exclusive bound
   */
  public InvalidTokenException(int token, int index, int vocabSize) {
    super(
        "token id "
            + token
            + " at index "
            + index
            + " is out of range [0, "
            + vocabSize
            + "): pass token ids of the model's vocabulary (CacheConfig.vocabSize)");
  }
}
