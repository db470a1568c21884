package io.kvtier.collective.hazelcast;

import io.kvtier.spi.ReduceOp;
import java.util.Objects;
import java.util.Optional;

/**
 * What one rank called at one sequence number, as the ranks compare it: ranks agree when their
 * calls are equal.
 *
 * @param kind the operation
 * @param op the reduction of an all-reduce, empty otherwise
 * @param tag the call site
 * @param argument the array length of an all-reduce, the root of a broadcast, 0 for a barrier
 */
record HazelcastCall(Kind kind, Optional<ReduceOp> op, String tag, int argument) {

  /** The operation of a call; the ordinal is written on the wire. */
  enum Kind {
    ALL_REDUCE,
    BROADCAST,
    BARRIER
  }

  /** Validates the fields. */
  HazelcastCall {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(tag, "tag");
    if (op.isPresent() != (kind == Kind.ALL_REDUCE)) {
      throw new IllegalArgumentException("op=" + op + " does not fit kind=" + kind);
    }
  }

  static HazelcastCall allReduce(ReduceOp op, int length, String tag) {
    return new HazelcastCall(Kind.ALL_REDUCE, Optional.of(op), tag, length);
  }

  static HazelcastCall broadcast(int root, String tag) {
    return new HazelcastCall(Kind.BROADCAST, Optional.empty(), tag, root);
  }

  static HazelcastCall barrier(String tag) {
    return new HazelcastCall(Kind.BARRIER, Optional.empty(), tag, 0);
  }

  /**
   * The call as messages print it, in the form of the engine's desync guard.
   *
   * @return for example {@code allReduce(MIN, length=3) tag 'sync'}
   */
  String describe() {
    String head =
        switch (kind) {
          case ALL_REDUCE -> "allReduce(" + op.orElseThrow() + ", length=" + argument + ")";
          case BROADCAST -> "broadcast(root=" + argument + ")";
          case BARRIER -> "barrier";
        };
    return head + " tag '" + tag + "'";
  }
}
