package io.kvtier.spi;

/**
 * Work a cache runs on a batch once its bytes are copied and before its handle reports done: a
 * checksum taken of the pages a backup wrote to the host, or checked on the host pages a load read
 * (docs/CACHE.md, "Verified restores"). A backend with copy threads of its own runs it there, off
 * the scheduler's tick ({@link TransferEngine#submit(TransferBatch, CopyCheck)}); the default runs
 * it on the first thread that sees the copy done.
 */
@FunctionalInterface
public interface CopyCheck {

  /**
   * Checks or records the copied batch. Runs at most once per batch, and only after a copy that
   * succeeded.
   *
   * @param batch the batch whose copy just finished
   * @throws TransferFailedException if the bytes are wrong: the batch then counts as failed
   */
  void afterCopy(TransferBatch batch);
}
