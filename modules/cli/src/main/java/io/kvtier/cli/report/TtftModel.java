package io.kvtier.cli.report;

import io.kvtier.simulator.SimulationResult;
import io.kvtier.simulator.SimulationTimeline;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The cost model behind the estimated time to first token (TTFT) of each request of a {@code
 * kvtier simulate} run. The simulator counts tokens and ticks, not time, so a request's TTFT is
 * priced from what its timeline says it did:
 *
 * <ul>
 *   <li>with the cache: {@link #usPerComputedToken()} per prompt token not reused, plus {@link
 *       #usPerLoadedPage()} per page loaded back from the host, plus {@link #usPerL3Page()} per
 *       page an L3 prefetch read from the store (such a page then pays its load from the host
 *       too: it reaches the device through the host tier), plus {@link #usPerQueuedTick()} per
 *       tick it waited between arrival and admission (which includes the ticks its prefetch
 *       took, since a request is admitted once its prefetch is decided);
 *   <li>without the cache: every prompt token computed, plus the same queueing.
 * </ul>
 *
 * <p>The run without a cache is not simulated, so its queue is unknown; it would be no shorter
 * (every request computes more and holds more pages), so charging it the queue of the run with
 * the cache makes its TTFT a lower bound and the cache's gain an understatement. Charging it no
 * queueing at all would compare a loaded server with an idle one. A token found on the device
 * costs nothing. Only requests that reached their first token count (aborted and rejected ones
 * have no TTFT).
 *
 * @param usPerComputedToken microseconds of prefill per computed prompt token
 * @param usPerLoadedPage microseconds per page loaded back from the host to the device
 * @param usPerL3Page microseconds per page read from the L3 store into the host (the store
 *     read), on top of its load from the host
 * @param usPerQueuedTick microseconds per tick waited before admission
 */
public record TtftModel(
    double usPerComputedToken, double usPerLoadedPage, double usPerL3Page, double usPerQueuedTick) {
  /**
   * The model {@code kvtier simulate} prints: 50 us per token, 2 us per page loaded from the
   * host, 20 us more per page read from the L3 store (a store read is slower than a host-to-device
   * copy), and one simulator tick (1 ms of virtual time) per tick queued.
   */
  public static final TtftModel DEFAULT = new TtftModel(50, 2, 20, 1000);

  /** Validates the costs. */
  public TtftModel {
    for (double cost :
        new double[] {usPerComputedToken, usPerLoadedPage, usPerL3Page, usPerQueuedTick}) {
      if (!(cost >= 0) || Double.isInfinite(cost)) {
        throw new IllegalArgumentException(
            "TTFT model costs must be finite and >= 0, got "
                + usPerComputedToken
                + " us per token, "
                + usPerLoadedPage
                + " us per loaded page, "
                + usPerL3Page
                + " us per L3 page and "
                + usPerQueuedTick
                + " us per queued tick");
      }
    }
  }

  /**
   * The TTFT of a run's requests, with and without the cache, in microseconds.
   *
   * @param requests requests that reached their first token
   * @param withoutCacheUs each one's TTFT when every prompt token is computed, ascending
   * @param withCacheUs each one's TTFT with the cache, ascending (not in the same request order)
   */
  public record Estimate(long requests, double[] withoutCacheUs, double[] withCacheUs) {
    /** Copies and sorts the values, which must be as many as the requests. */
    public Estimate {
      withoutCacheUs = withoutCacheUs.clone();
      withCacheUs = withCacheUs.clone();
      if (withoutCacheUs.length != requests || withCacheUs.length != requests) {
        throw new IllegalArgumentException(
            "requests="
                + requests
                + " but "
                + withoutCacheUs.length
                + " and "
                + withCacheUs.length
                + " TTFT values");
      }
      Arrays.sort(withoutCacheUs);
      Arrays.sort(withCacheUs);
    }

    /**
     * The mean TTFT without the cache.
     *
     * @return microseconds, 0 without requests
     */
    public double meanWithoutCacheUs() {
      return Arrays.stream(withoutCacheUs).average().orElse(0);
    }

    /**
     * The mean TTFT with the cache.
     *
     * @return microseconds, 0 without requests
     */
    public double meanWithCacheUs() {
      return Arrays.stream(withCacheUs).average().orElse(0);
    }

    /**
     * How much the cache shortens the mean TTFT.
     *
     * @return without / with, 1 if either is 0
     */
    public double speedup() {
      double with = meanWithCacheUs();
      double without = meanWithoutCacheUs();
      return with > 0 && without > 0 ? without / with : 1;
    }

    /**
     * A percentile of the TTFT without the cache (nearest rank).
     *
     * @param p the percentile, 0 to 100
     * @return microseconds, 0 without requests
     */
    public double withoutCachePercentileUs(double p) {
      return percentile(withoutCacheUs, p);
    }

    /**
     * A percentile of the TTFT with the cache (nearest rank).
     *
     * @param p the percentile, 0 to 100
     * @return microseconds, 0 without requests
     */
    public double withCachePercentileUs(double p) {
      return percentile(withCacheUs, p);
    }

    /**
     * The values without the cache.
     *
     * @return a copy, ascending
     */
    @Override
    public double[] withoutCacheUs() {
      return withoutCacheUs.clone();
    }

    /**
     * The values with the cache.
     *
     * @return a copy, ascending
     */
    @Override
    public double[] withCacheUs() {
      return withCacheUs.clone();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Estimate e
          && requests == e.requests
          && Arrays.equals(withoutCacheUs, e.withoutCacheUs)
          && Arrays.equals(withCacheUs, e.withCacheUs);
    }

    @Override
    public int hashCode() {
      return (Long.hashCode(requests) * 31 + Arrays.hashCode(withoutCacheUs)) * 31
          + Arrays.hashCode(withCacheUs);
    }

    @Override
    public String toString() {
      return String.format(
          Locale.ROOT,
          "Estimate[requests=%d, mean %.1f us without cache," + " %.1f us with cache]",
          requests,
          meanWithoutCacheUs(),
          meanWithCacheUs());
    }

    private static double percentile(double[] sorted, double p) {
      if (!(p >= 0 && p <= 100)) {
        throw new IllegalArgumentException("percentile " + p + " must be between 0 and 100");
      }
      if (sorted.length == 0) {
        return 0;
      }
      int rank = (int) Math.ceil(p / 100 * sorted.length);
      return sorted[Math.max(0, rank - 1)];
    }
  }

  /**
   * The model in words, as printed.
   *
   * @return one line without a newline
   */
  public String describe() {
    return String.format(
        Locale.ROOT,
        "%s us per computed prompt token + %s us per page loaded from host + %s us per page"
            + " read from the L3 store (then loaded from host) + %s us per tick queued before"
            + " admission (an L3 prefetch's wait included); without cache every prompt token is"
            + " computed, with the same queueing; per request that reached its first token",
        number(usPerComputedToken),
        number(usPerLoadedPage),
        number(usPerL3Page),
        number(usPerQueuedTick));
  }

  /**
   * The TTFT of one request without the cache.
   *
   * @param r the request
   * @return microseconds
   */
  public double withoutCacheUs(SimulationTimeline.Request r) {
    return usPerComputedToken * r.promptTokens() + usPerQueuedTick * r.queuedTicks();
  }

  /**
   * The TTFT of one request with the cache.
   *
   * @param r the request
   * @param pageSize tokens per page, to count the pages loaded back
   * @return microseconds
   */
  public double withCacheUs(SimulationTimeline.Request r, int pageSize) {
    if (pageSize < 1) {
      throw new IllegalArgumentException("pageSize=" + pageSize + " must be >= 1");
    }
    long hostPages = (r.cachedTokens().host() + pageSize - 1) / pageSize;
    long l3Pages = (r.cachedTokens().l3() + pageSize - 1) / pageSize;
    // An L3 page is read from the store into the host, then loaded like a host page.
    return usPerComputedToken * r.computedPromptTokens()
        + usPerLoadedPage * (hostPages + l3Pages)
        + usPerL3Page * l3Pages
        + usPerQueuedTick * r.queuedTicks();
  }

  /**
   * Estimates the TTFT of every request of a run that reached its first token.
   *
   * @param result the run
   * @param pageSize tokens per page
   * @return the estimate; no values if no request reached its first token
   */
  public Estimate estimate(SimulationResult result, int pageSize) {
    List<SimulationTimeline.Request> requests =
        result.timeline().requests().stream()
            .filter(SimulationTimeline.Request::hasFirstToken)
            .toList();
    double[] without = new double[requests.size()];
    double[] with = new double[requests.size()];
    for (int i = 0; i < requests.size(); i++) {
      without[i] = withoutCacheUs(requests.get(i));
      with[i] = withCacheUs(requests.get(i), pageSize);
    }
    return new Estimate(requests.size(), without, with);
  }

  private static String number(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
  }
}
