package io.kvtier.simulator;

import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.ForwardingCollective;
import io.kvtier.spi.ReduceOp;
import java.util.Objects;

/**
 * The collective as a simulated rank's engine sees it: the rank's own, with two additions.
 *
 * <ul>
 *   <li>An injected failure of the {@code recv}, {@code sync} or {@code digest} step is thrown
 *       before the call ({@link FailureInjector#at}).
 *   <li>{@link #failNextCall}: the simulator's own per-tick check runs on the raw collective,
 *       so it may be the call that meets a failed rank's failure barrier. Only the engine reads
 *       the failure out of the desync that carries it ({@link
 *       io.kvtier.core.rank.RankGroupFailedException}); the check hands the collective's
 *       exception to the engine's next call through here, so that this rank raises what every
 *       other rank raises. Passing it on as it is would not do: after a desync some providers
 *       (hazelcast) fail later calls with a message that no longer names the failure.
 * </ul>
 *
 * <p>Neither changes a call that goes through: a run without failures makes the same calls on
 * the same collective as without this wrapper.
 */
final class EngineCollective extends ForwardingCollective {
  private final FailureInjector injector;
  private CollectiveException handedOff;

  EngineCollective(Collective collective, FailureInjector injector) {
    super(collective);
    this.injector = Objects.requireNonNull(injector, "injector");
  }

  /** Makes the next call throw {@code e} without reaching the collective. */
  void failNextCall(CollectiveException e) {
    handedOff = Objects.requireNonNull(e, "e");
  }

  private void before() {
    CollectiveException e = handedOff;
    if (e != null) {
      handedOff = null;
      throw e;
    }
    injector.at();
  }

  @Override
  public long[] allReduce(ReduceOp op, long[] values, String tag) {
    before();
    return super.allReduce(op, values, tag);
  }

  @Override
  public void allReduceInto(ReduceOp op, long[] values, long[] result, String tag) {
    before();
    super.allReduceInto(op, values, result, tag);
  }

  @Override
  public byte[] broadcast(int root, byte[] payload, String tag) {
    before();
    return super.broadcast(root, payload, tag);
  }

  @Override
  public byte[] awaitBroadcast(int root, byte[] payload, String tag) {
    before();
    return super.awaitBroadcast(root, payload, tag);
  }

  @Override
  public void barrier(String tag) {
    before();
    super.barrier(tag);
  }

  @Override
  public String toString() {
    return delegate.toString();
  }
}
