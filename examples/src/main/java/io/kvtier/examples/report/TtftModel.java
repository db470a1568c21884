package io.kvtier.examples.report;

import io.kvtier.testkit.sim.SimulationResult;
import java.util.Locale;

/**
 * The compute-cost model behind the estimated time to first token (TTFT) of {@code kvtier
 * simulate}: prefilling one prompt token costs {@link #usPerComputedToken()} microseconds and
 * loading one page back from the host costs {@link #usPerLoadedPage()} microseconds; a token
 * found on the device costs nothing. The simulator reports totals, not one TTFT per request, so
 * the estimates are means over the admitted requests.
 *
 * @param usPerComputedToken microseconds of prefill per computed prompt token
 * @param usPerLoadedPage microseconds per page loaded back from the host
 */
public record TtftModel(double usPerComputedToken, double usPerLoadedPage) {
  /** The model {@code kvtier simulate} prints: 50 us per token, 2 us per loaded page. */
  public static final TtftModel DEFAULT = new TtftModel(50, 2);

  /** Validates the costs. */
  public TtftModel {
    if (!(usPerComputedToken >= 0) || !(usPerLoadedPage >= 0)
        || Double.isInfinite(usPerComputedToken) || Double.isInfinite(usPerLoadedPage)) {
      throw new IllegalArgumentException("TTFT model costs must be finite and >= 0, got "
          + usPerComputedToken + " us per token and " + usPerLoadedPage + " us per page");
    }
  }

  /**
   * The mean estimates of one run.
   *
   * @param admitted requests whose prompts were counted
   * @param withoutCacheUs mean TTFT when every prompt token is computed
   * @param withCacheUs mean TTFT when reused tokens are not computed and host pages are loaded
   */
  public record Estimate(long admitted, double withoutCacheUs, double withCacheUs) {
    /**
     * How much the cache shortens the mean TTFT.
     *
     * @return without / with, 1 if either is 0
     */
    public double speedup() {
      return withCacheUs > 0 && withoutCacheUs > 0 ? withoutCacheUs / withCacheUs : 1;
    }
  }

  /**
   * The model in words, as printed.
   *
   * @return one line without a newline
   */
  public String describe() {
    return String.format(Locale.ROOT,
        "%s us per computed prompt token + %s us per page loaded from host; means over"
            + " admitted requests", number(usPerComputedToken), number(usPerLoadedPage));
  }

  /**
   * Estimates the mean TTFT of a run with and without the cache.
   *
   * @param r the run
   * @param pageSize tokens per page, to count the pages loaded from the host
   * @return the estimate; zeros if no request was admitted
   */
  public Estimate estimate(SimulationResult r, int pageSize) {
    if (pageSize < 1) {
      throw new IllegalArgumentException("pageSize=" + pageSize + " must be >= 1");
    }
    long admitted = Math.max(0, r.requests() - r.rejected());
    if (admitted == 0) {
      return new Estimate(0, 0, 0);
    }
    long reused = r.hitTokens().total();
    long computedPrompt = Math.max(0, r.promptTokens() - reused);
    long loadedPages = (r.hitTokens().host() + pageSize - 1) / pageSize;
    double without = usPerComputedToken * r.promptTokens() / admitted;
    double with = (usPerComputedToken * computedPrompt + usPerLoadedPage * loadedPages) / admitted;
    return new Estimate(admitted, without, with);
  }

  private static String number(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
  }
}
