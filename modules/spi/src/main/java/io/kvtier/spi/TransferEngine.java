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
