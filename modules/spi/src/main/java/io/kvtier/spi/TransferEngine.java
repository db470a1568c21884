package io.kvtier.spi;

/**
 * Asynchronous batched page copies between one device pool and one host pool.
 *
 * <p>Ordering: batches of one direction complete in submission order (FIFO); the two directions
 * are independent. Submission never blocks on the copy itself. {@link #submit} is thread-safe.
 *
 * <p>Layer granularity: a load-back submits one batch per layer so that the model's layer {@code
 * i} can start once batch {@code i} is done, while later layers still copy.
 */
public interface TransferEngine extends AutoCloseable {

  /**
   * Starts copying a batch.
   *
   * @param batch the copies; every page must be within its pool and the layer within the layout
   * @return the handle to query or await
   * @throws IndexOutOfBoundsException if a page or the layer is out of range, naming it
   * @throws IllegalStateException if the engine is closed
   */
  TransferHandle submit(TransferBatch batch);

  /**
   * Starts copying a batch and runs {@code check} on it once its bytes are copied, before its
   * handle reports done; a check that throws {@link TransferFailedException} fails the batch as a
   * failed copy would. A backend with copy threads runs the check on them (off the caller's
   * thread); this default runs it on the first thread that sees the copy done, which keeps a
   * simulated backend deterministic.
   *
   * @param batch the copies, as for {@link #submit(TransferBatch)}
   * @param check the work to run after the copy
   * @return the handle to query or await
   * @throws IndexOutOfBoundsException if a page or the layer is out of range, naming it
   * @throws IllegalStateException if the engine is closed
   */
  default TransferHandle submit(TransferBatch batch, CopyCheck check) {
    return new CheckedTransferHandle(submit(batch), check);
  }

  /**
   * Number of batches submitted and not yet done, in both directions.
   *
   * @return the count
   */
  int inFlight();

  /**
   * Stops accepting batches and waits for those in flight to finish (or fail). Idempotent.
   */
  @Override
  void close();
}
