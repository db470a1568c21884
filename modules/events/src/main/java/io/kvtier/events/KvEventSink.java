package io.kvtier.events;

/**
 * Where a {@link KvEventStream}'s publisher thread sends encoded batches: a ZeroMQ socket pair or
 * a Hazelcast ringbuffer. Opened, called and closed on that one thread only, so an implementation
 * may create and hold sockets that are not thread-safe.
 */
public interface KvEventSink extends AutoCloseable {
  /**
   * Creates what the sink sends through (its sockets), on the publisher thread, before the first
   * send. The stream's constructor waits for it and rethrows what it throws, so that a bad or busy
   * address still fails at open.
   */
  default void open() {}

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

  /** Releases the sink's sockets or client; called on the publisher thread as it ends. */
  @Override
  void close();
}
