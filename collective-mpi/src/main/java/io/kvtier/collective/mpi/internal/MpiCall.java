package io.kvtier.collective.mpi.internal;

import io.kvtier.spi.ReduceOp;
import java.util.Objects;

/**
 * One collective call as the guard frame and the diagnostics see it.
 *
 * @param kind what was called
 * @param argument the array length of an all-reduce, the root of a broadcast, 0 otherwise
 * @param tag the call site
 * @param sequence the call's number in its group (0 for the join)
 */
record MpiCall(Kind kind, int argument, String tag, long sequence) {

  /** The operations a rank can call; each has its own fingerprint. */
  enum Kind {
    /** The join's agreement on configuration and group. */
    JOIN,
    /** {@code allReduce(MIN)}. */
    ALL_REDUCE_MIN,
    /** {@code allReduce(MAX)}. */
    ALL_REDUCE_MAX,
    /** {@code allReduce(SUM)}. */
    ALL_REDUCE_SUM,
    /** {@code broadcast}. */
    BROADCAST,
    /** {@code barrier}. */
    BARRIER,
    /** {@code MPI_Finalize} at exit; no collective may follow it. */
    FINALIZE;

    static Kind allReduce(ReduceOp op) {
      return switch (op) {
        case MIN -> ALL_REDUCE_MIN;
        case MAX -> ALL_REDUCE_MAX;
        case SUM -> ALL_REDUCE_SUM;
      };
    }
  }

  /** Validates the fields. */
  MpiCall {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(tag, "tag");
  }

  /**
   * A 64-bit fingerprint of everything ranks must agree on (operation, length or root, tag), not
   * the sequence number, which travels beside it. FNV-1a over the tag's characters, then a
   * SplitMix64 finalizer so that tags differing in one character differ in about half the bits.
   *
   * @return the fingerprint
   */
  long fingerprint() {
    return fingerprint(kind, argument, tag);
  }

  /**
   * {@link #fingerprint()} of a call given by its fields, for the hot path that keeps no record.
   *
   * @param kind the operation
   * @param argument the array length or root
   * @param tag the call site
   * @return the fingerprint
   */
  static long fingerprint(Kind kind, int argument, String tag) {
    long h = 0xcbf29ce484222325L;
    h = (h ^ kind.ordinal()) * 0x100000001b3L;
    h = (h ^ argument) * 0x100000001b3L;
    for (int i = 0; i < tag.length(); i++) {
      h = (h ^ tag.charAt(i)) * 0x100000001b3L;
    }
    h = (h ^ tag.length()) * 0x100000001b3L;
    h = (h ^ (h >>> 30)) * 0xBF58476D1CE4E5B9L;
    h = (h ^ (h >>> 27)) * 0x94D049BB133111EBL;
    return h ^ (h >>> 31);
  }

  /**
   * A call's fingerprint bound to its sequence number, what the guard frame compares: a rank one
   * call ahead of the others differs even where the two calls have the same fingerprint.
   * SplitMix64's finalizer over the fingerprint xor the sequence number times the golden ratio:
   * for one fingerprint, distinct sequence numbers never collide (every step is a bijection).
   *
   * @param print {@link #fingerprint(Kind, int, String)}
   * @param sequence the call's number in its group
   * @return the fingerprint of this call at this point of the sequence
   */
  static long sequenced(long print, long sequence) {
    long h = print ^ sequence * 0x9E3779B97F4A7C15L;
    h = (h ^ (h >>> 30)) * 0xBF58476D1CE4E5B9L;
    h = (h ^ (h >>> 27)) * 0x94D049BB133111EBL;
    return h ^ (h >>> 31);
  }

  /**
   * A readable description for desync and watchdog messages.
   *
   * @return for example {@code allReduce(MIN, length=3) tag 'sync' seq 17}
   */
  String describe() {
    String call =
        switch (kind) {
          case JOIN -> "join";
          case ALL_REDUCE_MIN -> "allReduce(MIN, length=" + argument + ")";
          case ALL_REDUCE_MAX -> "allReduce(MAX, length=" + argument + ")";
          case ALL_REDUCE_SUM -> "allReduce(SUM, length=" + argument + ")";
          case BROADCAST -> "broadcast(root=" + argument + ")";
          case BARRIER -> "barrier";
          case FINALIZE -> "finalize";
        };
    return call + " tag '" + tag + "' seq " + sequence;
  }

  @Override
  public String toString() {
    return describe();
  }
}
