package io.kvtier.spi;

import java.time.Duration;
import java.util.Optional;

/**
 * The completion of one submitted {@link TransferBatch}. Handles of one direction complete in
 * submission order: when a handle reports done, every handle submitted before it in the same
 * direction is done too. All methods are thread-safe.
 */
public interface TransferHandle {

  /**
   * The batch's sequence number within its direction, from 0 in submission order.
   *
   * @return the sequence number
   */
  long sequence();

  /**
   * The batch this handle tracks.
   *
   * @return the batch
   */
  TransferBatch batch();

  /**
   * Whether the copy has finished, successfully or not, without blocking. A query before the copy
   * finished returns false; once it returns true it keeps returning true. The destination pages
   * must not be read, nor the source pages freed or reused, before this returns true.
   *
   * @return true when the copy is complete or failed
   */
  boolean isDone();

  /**
   * Why the copy failed, once {@link #isDone()} is true.
   *
   * @return the failure, or empty if the copy succeeded or is still running
   */
  Optional<Throwable> failure();

  /**
   * Blocks until the copy is done.
   *
   * @throws TransferFailedException if the copy failed
   * @throws InterruptedException if interrupted while waiting
   */
  void await() throws InterruptedException;

  /**
   * Blocks until the copy is done or the timeout elapses, in the engine's time source.
   *
   * @param timeout how long to wait at most
   * @return true if done, false on timeout
   * @throws TransferFailedException if the copy failed
   * @throws InterruptedException if interrupted while waiting
   */
  boolean await(Duration timeout) throws InterruptedException;
}
