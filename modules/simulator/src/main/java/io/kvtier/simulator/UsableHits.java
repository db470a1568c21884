package io.kvtier.simulator;

import io.kvtier.core.rank.RequestListener;
import io.kvtier.core.rank.RequestOutcome;
import io.kvtier.simulator.SimulationResult.HitTokens;

/**
 * Counts the usable hit tokens of a run with recurrent-state snapshots per tier (HYBRID.md §5,
 * §8): the part of each request's match that it resumes from. The engine tells each admission's
 * match per tier and the usable length ({@link RequestListener#admitted(long, long, int, int, int,
 * int)}, the total of {@link io.kvtier.core.rank.RankEngineStats#usableHitTokens()}); this cuts
 * the match at the usable length in match order: the device prefix first, then the pages loaded
 * back from the host, then those an L3 prefetch brought ({@link #split}).
 *
 * <p>The counts are replicated (every rank admits the same requests with the same matches), so
 * one rank's are the run's. Without snapshots the usable hit tokens are the matched ones.
 */
final class UsableHits {
  private long device;
  private long host;
  private long l3;

  /**
   * The usable part of a match of {@code device + host + l3} tokens, per tier.
   *
   * @param device matched on the device
   * @param host matched on the host (loaded back)
   * @param l3 matched on the host after an L3 prefetch
   * @param usable the prefix the request resumes from, at most the match
   * @return the usable tokens of each tier; the match itself when {@code usable} is all of it
   */
  static HitTokens split(long device, long host, long l3, long usable) {
    long d = Math.min(usable, device);
    long h = Math.min(usable - d, host);
    long l = Math.min(usable - d - h, l3);
    return new HitTokens(d, h, l);
  }

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
        admitted(
            tick,
            id,
            deviceHitTokens,
            hostHitTokens,
            l3HitTokens,
            deviceHitTokens + hostHitTokens + l3HitTokens);
      }

      @Override
      public void admitted(
          long tick,
          long id,
          int deviceHitTokens,
          int hostHitTokens,
          int l3HitTokens,
          int usableTokens) {
        HitTokens u = split(deviceHitTokens, hostHitTokens, l3HitTokens, usableTokens);
        device += u.device();
        host += u.host();
        l3 += u.l3();
        listener.admitted(tick, id, deviceHitTokens, hostHitTokens, l3HitTokens, usableTokens);
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
        listener.ended(tick, id, outcome);
      }
    };
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
