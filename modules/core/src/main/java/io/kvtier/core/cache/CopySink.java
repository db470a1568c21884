package io.kvtier.core.cache;

import io.kvtier.spi.TransferBatch;

/**
 * How replicated code starts copies: every method submits batches to the transfer engine, or
 * files the copies already running, under the ack they belong to, and returns nothing. Code that
 * holds only this type (the controllers {@link Backups} and {@link LoadBacks}, prepared backups,
 * and through them the tree and the evictor) has no way to learn whether a copy has finished:
 * completion stays in {@link LocalProgress}, which only {@link CommitProtocol} holds as such
 * (ARCHITECTURE.md §4).
 *
 * <p>Every call that queues a copy group pairs with exactly one entry that the caller adds to the
 * matching replicated FIFO at the same time, in the same order. What a failed submission leaves
 * behind is said per method.
 */
interface CopySink {

  /**
   * Submits one device-to-host batch as the copy group of one new write-FIFO entry. If the
   * submission throws, nothing is queued.
   */
  void write(TransferBatch batch);

  /**
   * Submits one batch per layer as the copy group of one new load-FIFO entry. If a submission
   * throws, nothing is queued (layers started before keep running, untracked) and a {@link
   * SubmitFailure} propagates with the number of started layers and the engine's exception.
   */
  void load(TransferBatch[] layers);

  /**
   * Submits one streamed layer of request {@code requestId}'s prepared backup, kept until the
   * backup is attached or retired. If the submission throws, nothing is kept.
   */
  void stream(long requestId, int layers, TransferBatch batch);

  /**
   * Queues the copy group of one new write-FIFO entry for request {@code requestId}'s prepared
   * backup: its streamed copies plus the {@code catchUp} batches, submitted now (none for a
   * retirement). If a submission throws, the group of the streamed and the started catch-up
   * copies is queued anyway (they keep running into the backup's slots) and the engine's
   * exception propagates: the caller queues a retirement entry for it.
   */
  void writeWithStreamed(long requestId, TransferBatch[] catchUp);

  /** The first {@code n} entries of the write FIFO were committed. */
  void committedWrites(int n);

  /** The first {@code n} entries of the load FIFO were committed. */
  void committedLoads(int n);

  /** A submission failed after {@code started} batches of a group had been submitted. */
  final class SubmitFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int started;

    SubmitFailure(int started, RuntimeException cause) {
      super(cause.getMessage(), cause);
      this.started = started;
    }

    int started() {
      return started;
    }

    /** The engine's exception, to rethrow unchanged. */
    RuntimeException engineFailure() {
      return (RuntimeException) getCause();
    }
  }
}
