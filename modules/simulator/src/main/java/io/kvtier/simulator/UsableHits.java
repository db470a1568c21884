package io.kvtier.simulator;

import io.kvtier.core.rank.RequestListener;
import io.kvtier.core.rank.RequestOutcome;
import io.kvtier.simulator.SimulationResult.HitTokens;
import java.util.HashMap;
import java.util.Map;

/**
 * Counts the usable hit tokens of a run with recurrent-state snapshots (HYBRID.md §5, §8): the
 * part of each request's match that the model resumed from. It hears each request's match per
 * tier from the engine's {@link RequestListener#admitted(long, long, int, int, int)} and the
 * position the model started the request at from the {@link PatternModel} (its first step's
 * {@code from}: what the request really did not compute), and cuts the match at that position in
 * match order, device prefix first, then the pages loaded back from the host, then those an L3
 * prefetch brought. A request that ends before its first step resumed from nothing: 0 usable.
 *
 * <p>The counts are replicated (every rank admits and starts the same requests at the same
 * positions), so one rank's are the run's. Without snapshots the run's usable hit tokens are its
 * matched ones, and this class is not used.
 */
final class UsableHits {
  /** Matched tokens per tier of the admitted requests that have not run a step yet. */
  private final Map<Long, int[]> admitted = new HashMap<>();

  private long device;
  private long host;
  private long l3;

  /**
   * {@code listener}, with this counter hearing every admission first.
   *
   * @param listener the listener to call after
   * @return the listener to give the engine
   */
  RequestListener listening(RequestListener listener) {
    return new RequestListener() {
      @Override
      public void arrived(long tick, long id, int promptTokens) {
        listener.arrived(tick, id, promptTokens);
      }

      @Override
      public void admitted(
          long tick, long id, int deviceHitTokens, int hostHitTokens, int l3HitTokens) {
        admitted.put(id, new int[] {deviceHitTokens, hostHitTokens, l3HitTokens});
        listener.admitted(tick, id, deviceHitTokens, hostHitTokens, l3HitTokens);
      }

      @Override
      public void prefilled(long tick, long id) {
        listener.prefilled(tick, id);
      }

      @Override
      public void rejected(long tick, long id, String reason) {
        listener.rejected(tick, id, reason);
      }

      @Override
      public void ended(long tick, long id, RequestOutcome outcome) {
        admitted.remove(id);
        listener.ended(tick, id, outcome);
      }
    };
  }

  /**
   * The model ran the request's first step from {@code from}: the usable part of its match.
   *
   * @param id the request
   * @param from the first position it computed
   */
  void started(long id, int from) {
    int[] m = admitted.remove(id);
    if (m == null) {
      return;
    }
    int d = Math.min(from, m[0]);
    int h = Math.min(from - d, m[1]);
    int l = Math.min(from - d - h, m[2]);
    device += d;
    host += h;
    l3 += l;
  }

  /**
   * The usable hit tokens so far.
   *
   * @return per tier
   */
  HitTokens tokens() {
    return new HitTokens(device, host, l3);
  }
}
