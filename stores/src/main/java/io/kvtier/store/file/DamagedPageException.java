package io.kvtier.store.file;

/**
 * A page file that is not a whole, intact page of this store: wrong size, foreign header, another
 * layout or key, or a checksum that does not match. The store turns it into a counted miss and
 * deletes the file; it never leaves the store.
 */
final class DamagedPageException extends Exception {
  private static final long serialVersionUID = 1L;

  DamagedPageException(String reason) {
    // The reason says everything; a stack trace per damaged page would only be noise.
    super(reason, null, false, false);
  }
}
