package io.kvtier.collective.hazelcast;

import io.kvtier.spi.ReduceOp;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.Optional;

/**
 * One rank's contribution to one round: its call and its data (the values of an all-reduce, the
 * payload of a broadcast's root). Encoded as a byte array, the value type Hazelcast stores
 * without a serializer of ours, so the cluster needs none of kvtier's classes.
 *
 * @param sequence the round
 * @param rank the contributing rank
 * @param call what the rank called
 * @param values the rank's values of an all-reduce; empty for other calls
 * @param payload the root's payload of a broadcast; empty for other calls and other ranks
 */
record HazelcastContribution(
    long sequence, int rank, HazelcastCall call, long[] values, Optional<byte[]> payload) {

  private static final int MAGIC = 0x4B56_4331; // "KVC1"

  /** Validates the fields. */
  HazelcastContribution {
    Objects.requireNonNull(call, "call");
    Objects.requireNonNull(values, "values");
    Objects.requireNonNull(payload, "payload");
  }

  /**
   * The contribution as bytes.
   *
   * @return a new array
   */
  byte[] encode() {
    byte[] tag = call.tag().getBytes(StandardCharsets.UTF_8);
    int payloadLength = payload.map(p -> p.length).orElse(0);
    ByteBuffer out =
        ByteBuffer.allocate(
            4 + 8 + 4 + 1 + 1 + 4 + 4 + tag.length + 4 + 8 * values.length + 4 + payloadLength);
    out.putInt(MAGIC).putLong(sequence).putInt(rank);
    out.put((byte) call.kind().ordinal());
    out.put((byte) call.op().map(Enum::ordinal).orElse(-1).intValue());
    out.putInt(call.argument());
    out.putInt(tag.length).put(tag);
    out.putInt(values.length);
    for (long v : values) {
      out.putLong(v);
    }
    out.putInt(payload.isPresent() ? payloadLength : -1);
    payload.ifPresent(out::put);
    return out.array();
  }

  /**
   * Reads a contribution.
   *
   * @param bytes what {@link #encode()} wrote
   * @return the contribution
   * @throws IllegalStateException if the bytes are not a contribution
   */
  static HazelcastContribution decode(byte[] bytes) {
    try {
      ByteBuffer in = ByteBuffer.wrap(bytes);
      if (in.getInt() != MAGIC) {
        throw new IllegalStateException("not a kvtier contribution (bad magic)");
      }
      long sequence = in.getLong();
      int rank = in.getInt();
      HazelcastCall.Kind kind = HazelcastCall.Kind.values()[in.get()];
      int opOrdinal = in.get();
      Optional<ReduceOp> op =
          opOrdinal < 0 ? Optional.empty() : Optional.of(ReduceOp.values()[opOrdinal]);
      int argument = in.getInt();
      byte[] tag = new byte[in.getInt()];
      in.get(tag);
      long[] values = new long[in.getInt()];
      for (int i = 0; i < values.length; i++) {
        values[i] = in.getLong();
      }
      int payloadLength = in.getInt();
      Optional<byte[]> payload = Optional.empty();
      if (payloadLength >= 0) {
        byte[] p = new byte[payloadLength];
        in.get(p);
        payload = Optional.of(p);
      }
      HazelcastCall call =
          new HazelcastCall(kind, op, new String(tag, StandardCharsets.UTF_8), argument);
      return new HazelcastContribution(sequence, rank, call, values, payload);
    } catch (RuntimeException e) {
      throw new IllegalStateException(
          "a contribution of " + bytes.length + " bytes does not decode: " + e, e);
    }
  }
}
