package io.kvtier.route;

import java.io.IOException;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * Reads vLLM's msgpack {@code EventBatch} (docs/EVENTS.md §2) into the index, whichever
 * transport brought it (ZeroMQ, a Hazelcast ringbuffer).
 */
final class EventBatches {
  private static final System.Logger LOG = System.getLogger(EventBatches.class.getName());

  private EventBatches() {}

  /**
   * Applies one EventBatch {@code [ts, [events...], dp_rank]} of a replica.
   *
   * @return false if the batch could not be read: what it changed is unknown, so the replica's
   *     blocks were forgotten
   */
  static boolean apply(byte[] payload, int replica, PrefixIndex index) {
    try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
      u.unpackArrayHeader();
      u.skipValue();
      int events = u.unpackArrayHeader();
      for (int i = 0; i < events; i++) {
        int fields = u.unpackArrayHeader();
        String tag = u.unpackString();
        switch (tag) {
          case "AllBlocksCleared" -> index.clear(replica);
          case "BlockStored" -> {
            long[] hashes = hashes(u);
            for (int f = 2; f < 6; f++) {
              u.skipValue();
            }
            index.stored(replica, medium(u), hashes);
            skip(u, fields - 7);
          }
          case "BlockRemoved" -> {
            long[] hashes = hashes(u);
            index.removed(replica, medium(u), hashes);
            skip(u, fields - 3);
          }
          default -> skip(u, fields - 1);
        }
      }
      return true;
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "unreadable event batch from replica " + replica, e);
      index.clear(replica);
      return false;
    }
  }

  private static long[] hashes(MessageUnpacker u) throws IOException {
    int n = u.unpackArrayHeader();
    long[] out = new long[n];
    for (int i = 0; i < n; i++) {
      // uint64 above Long.MAX_VALUE keeps its 64 bits.
      out[i] = u.unpackBigInteger().longValue();
    }
    return out;
  }

  private static String medium(MessageUnpacker u) throws IOException {
    if (u.getNextFormat().getValueType() == ValueType.NIL) {
      u.unpackNil();
      return "GPU";
    }
    return u.unpackString();
  }

  private static void skip(MessageUnpacker u, int values) throws IOException {
    for (int i = 0; i < values; i++) {
      u.skipValue();
    }
  }
}
