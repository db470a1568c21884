package io.kvtier.core.cache;

/** A token key whose length must be a whole number of pages is not. */
public class MisalignedKeyException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param what the argument, for example {@code tokens}
   * @param length its length
   * @param pageSize the page size
   */
  public MisalignedKeyException(String what, int length, int pageSize) {
    super(
        what
            + ".length="
            + length
            + " is not a multiple of pageSize="
            + pageSize
            + ": pass whole pages (drop the last "
            + (length % pageSize)
            + " tokens)");
  }
}
