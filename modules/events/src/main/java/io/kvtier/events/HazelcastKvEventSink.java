package io.kvtier.events;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.ringbuffer.Ringbuffer;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * Publishes batches to a Hazelcast ringbuffer, for fleets that run Hazelcast: each item is the
 * 8-byte big-endian sequence followed by the msgpack {@code EventBatch}, the same bytes as the
 * ZeroMQ frames. The ringbuffer is the replay buffer (a reader starts from any sequence still
 * held; its capacity is the member's ringbuffer config, 10,000 items by default), and several
 * routers can read one ringbuffer and build the same index.
 */
public final class HazelcastKvEventSink implements KvEventSink {
  private final Ringbuffer<byte[]> ringbuffer;
  private final Runnable onClose;

  /**
   * A sink adding to the ringbuffer {@code name} of {@code instance}.
   *
   * @param instance a member or client; {@code onClose} runs at {@link #close}
   * @param name the ringbuffer's name
   * @param onClose what closing the sink does with the instance (shut a client down, or nothing
   *     for an instance the caller owns)
   */
  public HazelcastKvEventSink(HazelcastInstance instance, String name, Runnable onClose) {
    Objects.requireNonNull(instance, "instance");
    this.ringbuffer = instance.getRingbuffer(Objects.requireNonNull(name, "name"));
    this.onClose = Objects.requireNonNull(onClose, "onClose");
  }

  /**
   * An item's bytes: the sequence, then the payload.
   *
   * @param sequence the batch's sequence
   * @param payload the msgpack batch
   * @return the item
   */
  public static byte[] item(long sequence, byte[] payload) {
    return ByteBuffer.allocate(8 + payload.length).putLong(sequence).put(payload).array();
  }

  @Override
  public void send(long sequence, byte[] payload) {
    ringbuffer.add(item(sequence, payload));
  }

  @Override
  public void close() {
    onClose.run();
  }
}
