package io.kvtier.spi;

import java.util.Objects;

/**
 * A group of ranks that meet in collective operations. Every rank of the group must call the same
 * operations in the same order with the same tag; the {@code tag} names the call site (for
 * example {@code "sync"}, {@code "recv"}) and together with the per-group sequence number lets an
 * implementation detect ranks that are out of step.
 *
 * <p>Errors: a rank that calls a different operation or tag than the others at the same sequence
 * number makes the call throw {@link CollectiveDesyncException} on every rank, whatever the
 * others call, with a message that names each rank's call and tag (of each rank that arrived);
 * a call that does not complete within the group's watchdog timeout throws {@link
 * CollectiveTimeoutException} on the ranks that are waiting ({@link #awaitBroadcast} excepted:
 * it ends on the implementation's own failure detection instead). After either, the group is broken:
 * every later call throws. The engine relies on the desync: a rank whose step failed calls a
 * barrier whose tag names the failure, and every rank learns it from the desync's message.
 *
 * <p>Thread-safety: one thread per rank calls the collective at a time; calls from several
 * threads of one rank must be serialized by the caller.
 */
public interface Collective extends AutoCloseable {

  /**
   * This rank's index in the group.
   *
   * @return {@code 0 <= rank() < size()}
   */
  int rank();

  /**
   * The number of ranks in the group.
   *
   * @return at least 1
   */
  int size();

  /**
   * Reduces {@code values} element-wise across all ranks.
   *
   * @param op the reduction
   * @param values this rank's values; every rank passes the same length (else desync)
   * @param tag the call site
   * @return a new array with the reduced values, identical on every rank
   */
  long[] allReduce(ReduceOp op, long[] values, String tag);

  /**
   * {@link #allReduce} into an array of the caller's: the same collective call (same tag and
   * sequence number rules; ranks may mix the two forms), without a new array per call, for
   * callers that reduce every tick, where a fresh array is a measurable part of a sub-microsecond
   * call (docs/PERFORMANCE.md, "MPI allReduce latency").
   *
   * <p>The default calls {@link #allReduce} and copies; providers override it to skip the copy.
   * The arguments are checked before any communication, so a rank with a bad argument throws
   * alone: pass the same lengths on every rank.
   *
   * @param op the reduction
   * @param values this rank's values; every rank passes the same length (else desync)
   * @param result where the reduced values go, identical on every rank; as long as {@code
   *     values}, and may be {@code values} itself
   * @param tag the call site
   * @throws IllegalArgumentException if {@code result} is not as long as {@code values}
   */
  default void allReduceInto(ReduceOp op, long[] values, long[] result, String tag) {
    checkIntoArguments(values, result);
    long[] reduced = allReduce(op, values, tag);
    System.arraycopy(reduced, 0, result, 0, reduced.length);
  }

  /**
   * The argument checks of {@link #allReduceInto}, for providers and wrappers that override it:
   * they must run before any communication, so that a rank with a bad argument throws alone.
   *
   * @param values this rank's values
   * @param result where the reduced values are to go
   * @throws NullPointerException if either is null
   * @throws IllegalArgumentException if {@code result} is not as long as {@code values}
   */
  static void checkIntoArguments(long[] values, long[] result) {
    Objects.requireNonNull(values, "values");
    Objects.requireNonNull(result, "result");
    if (result.length != values.length) {
      throw new IllegalArgumentException(
          "result.length="
              + result.length
              + " must equal"
              + " values.length="
              + values.length
              + ": allReduceInto writes one reduced value per"
              + " input value");
    }
  }

  /**
   * Sends {@code payload} from the root to every rank.
   *
   * @param root the rank whose payload is sent; every rank passes the same root (else desync)
   * @param payload the bytes to send on the root; ignored (may be null) on the other ranks
   * @param tag the call site
   * @return the root's payload, on every rank (a copy; the caller may modify it)
   */
  byte[] broadcast(int root, byte[] payload, String tag);

  /**
   * {@link #broadcast}, for ranks that wait for work: the same call (same operation, tag and
   * sequence number rules; ranks may mix the two forms), but no watchdog bounds the wait. A rank
   * waits in it for as long as the root stays away, with no traffic of its own while it waits,
   * and the wait ends with a {@link CollectiveException} as soon as the implementation's own
   * failure detection finds a rank of the group gone: a {@link CollectiveRankLostException}
   * naming the rank (Hazelcast's membership, the {@code local} group's live threads), a desync
   * when a rank closed its handle or called something else, or the end of the whole job (MPI
   * aborts every process when one dies). A rank group waits for its next tick this way while it
   * is idle, so that an idle group makes no collective calls (ARCHITECTURE.md §6).
   *
   * <p>The default is {@link #broadcast}, watchdog included: a provider without failure
   * detection of its own keeps the bound, and an idle group over it fails at the watchdog.
   * Decorators forward it to their delegate's {@code awaitBroadcast}.
   *
   * @param root the rank whose payload is sent; every rank passes the same root (else desync)
   * @param payload the bytes to send on the root; ignored (may be null) on the other ranks
   * @param tag the call site
   * @return the root's payload, on every rank (a copy; the caller may modify it)
   * @throws CollectiveRankLostException when a rank of the group is found gone
   */
  default byte[] awaitBroadcast(int root, byte[] payload, String tag) {
    return broadcast(root, payload, tag);
  }

  /**
   * Waits until every rank has reached this barrier.
   *
   * @param tag the call site
   */
  void barrier(String tag);

  /**
   * Leaves the group and releases its resources. A rank that closes while others wait in a
   * collective makes them fail (desync or timeout), never hang. Idempotent.
   */
  @Override
  void close();
}
