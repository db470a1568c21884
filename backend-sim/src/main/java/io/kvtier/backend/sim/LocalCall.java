package io.kvtier.backend.sim;

import io.kvtier.spi.ReduceOp;
import java.util.Objects;

/**
 * One rank's collective call as the {@code local} group compares it: ranks agree at a sequence
 * number when their calls are equal.
 *
 * @param kind the operation, with the reduction for an all-reduce
 * @param tag the call site
 * @param sequence the rank's call count before this call
 * @param argument the array length of an all-reduce, the root of a broadcast, 0 for a barrier
 */
record LocalCall(LocalCall.Kind kind, String tag, long sequence, int argument) {

  /** The operation of a call. */
  enum Kind {
    ALL_REDUCE_MIN("allReduce(MIN)", "length"),
    ALL_REDUCE_MAX("allReduce(MAX)", "length"),
    ALL_REDUCE_SUM("allReduce(SUM)", "length"),
    BROADCAST("broadcast", "root"),
    BARRIER("barrier", "");

    final String label;
    final String argumentName;

    Kind(String label, String argumentName) {
      this.label = label;
      this.argumentName = argumentName;
    }

    static Kind of(ReduceOp op) {
      return switch (op) {
        case MIN -> ALL_REDUCE_MIN;
        case MAX -> ALL_REDUCE_MAX;
        case SUM -> ALL_REDUCE_SUM;
      };
    }
  }

  /** Validates the fields. */
  LocalCall {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(tag, "tag");
  }

  /**
   * The call as the messages print it.
   *
   * @return for example {@code allReduce(MIN) tag=sync seq=5 length=3}
   */
  String describe() {
    return kind.label
        + " tag="
        + tag
        + " seq="
        + sequence
        + (kind.argumentName.isEmpty() ? "" : " " + kind.argumentName + "=" + argument);
  }
}
