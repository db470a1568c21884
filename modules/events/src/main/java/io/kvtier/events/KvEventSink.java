package io.kvtier.events;

/**
 * Where a {@link KvEventStream}'s publisher thread sends encoded batches: a ZeroMQ socket pair or
 * a Hazelcast ringbuffer. Called on that one thread only, so an implementation may hold sockets
 * that are not thread-safe.
 */
public interface KvEventSink extends AutoCloseable {
  /**
   * Sends one batch.
   *
   * @param sequence the batch's sequence number
   * @param payload the msgpack {@code EventBatch}
   */
  void send(long sequence, byte[] payload);

  /**
   * Does what waits between batches (answers replay requests); called at least every flush
   * interval. Must not block.
   */
  default void service() {}

  /** Releases the sink's sockets or client. */
  @Override
  void close();
}
