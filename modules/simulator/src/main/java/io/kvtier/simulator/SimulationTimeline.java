package io.kvtier.simulator;

import io.kvtier.core.cache.PoolUsage;
import io.kvtier.core.rank.RequestOutcome;
import io.kvtier.simulator.SimulationResult.HitTokens;
import java.util.List;
import java.util.Objects;

/**
 * What a {@link MultiRankSimulator} run did over time, recorded on rank 0 during the run (every
 * value is replicated, so rank 0 speaks for every rank): the tiers' occupancy and the cumulative
 * token counters at sampled ticks, and the milestones of each request. A pure function of the
 * config, like the rest of the {@link SimulationResult}.
 *
 * <p>Bounded whatever the run's length: a sample is taken every {@code sampleStride} ticks and
 * a request is kept if its arrival index is a multiple of {@code requestStride}. Both strides
 * start at 1 and double whenever the kept entries reach {@link #MAX_SAMPLES} or {@link
 * #MAX_REQUESTS}, dropping every other one, so the strides depend only on the run's length.
 *
 * @param sampleStride ticks between two samples, a power of two
 * @param samples the samples in tick order: every multiple of the stride, then the tick the run
 *     drained at
 * @param requestStride the arrival indexes (0, 1, ...) kept are multiples of it, a power of two
 * @param requests the kept requests that ended (finished, aborted, rejected or failed by a
 *     load-back), in arrival order
 */
public record SimulationTimeline(
    long sampleStride, List<Sample> samples, long requestStride, List<Request> requests) {

  /** The most samples kept before the sample stride doubles. */
  public static final int MAX_SAMPLES = 2048;

  /** The most requests kept before the request stride doubles. */
  public static final int MAX_REQUESTS = 1 << 15;

  /** Validates the strides and the order of the samples, and copies the lists. */
  public SimulationTimeline {
    stride("sampleStride", sampleStride);
    stride("requestStride", requestStride);
    samples = List.copyOf(samples);
    requests = List.copyOf(requests);
    for (int i = 1; i < samples.size(); i++) {
      if (samples.get(i).tick() <= samples.get(i - 1).tick()) {
        throw new IllegalArgumentException(
            "samples out of order: tick "
                + samples.get(i).tick()
                + " at index "
                + i
                + " follows tick "
                + samples.get(i - 1).tick());
      }
    }
  }

  private static void stride(String name, long stride) {
    if (stride < 1 || Long.bitCount(stride) != 1) {
      throw new IllegalArgumentException(name + "=" + stride + " must be a power of two >= 1");
    }
  }

  /**
   * The state after one tick, from rank 0.
   *
   * @param tick the tick, from 0
   * @param device the device tier's pages: free, evictable (cached) and protected (held by
   *     requests and copies)
   * @param host the host tier's pages; capacity 0 without a host tier
   * @param promptTokens prompt tokens of the requests admitted so far
   * @param hitTokens prompt tokens reused so far, per tier
   * @param computedTokens tokens whose KV the model computed so far
   */
  public record Sample(
      long tick,
      PoolUsage device,
      PoolUsage host,
      long promptTokens,
      HitTokens hitTokens,
      long computedTokens) {
    /** Validates the fields. */
    public Sample {
      Objects.requireNonNull(device, "device");
      Objects.requireNonNull(host, "host");
      Objects.requireNonNull(hitTokens, "hitTokens");
      if (tick < 0 || promptTokens < 0 || computedTokens < 0) {
        throw new IllegalArgumentException(
            "negative sample field: tick="
                + tick
                + " promptTokens="
                + promptTokens
                + " computedTokens="
                + computedTokens);
      }
      if (hitTokens.total() > promptTokens) {
        throw new IllegalArgumentException(
            "hit tokens "
                + hitTokens.total()
                + " exceed the prompt tokens "
                + promptTokens
                + " at tick "
                + tick);
      }
    }
  }

  /**
   * One request's milestones.
   *
   * @param id the engine's request id
   * @param arrivalTick the tick it arrived
   * @param admitTick the tick it was admitted, -1 if never
   * @param firstTokenTick the tick its prefill completed (the tick of its first token), -1 if
   *     never
   * @param promptTokens its prompt length
   * @param cachedTokens prompt tokens reused at admission, per tier; zeros if never admitted
   * @param outcome how it ended
   */
  public record Request(
      long id,
      long arrivalTick,
      long admitTick,
      long firstTokenTick,
      int promptTokens,
      HitTokens cachedTokens,
      RequestOutcome outcome) {
    /** Validates that the milestones come in order and the cache hits fit the prompt. */
    public Request {
      Objects.requireNonNull(cachedTokens, "cachedTokens");
      Objects.requireNonNull(outcome, "outcome");
      if (arrivalTick < 0 || promptTokens < 1) {
        throw new IllegalArgumentException(
            "request "
                + id
                + ": arrivalTick="
                + arrivalTick
                + " must be >= 0 and promptTokens="
                + promptTokens
                + " >= 1");
      }
      if (admitTick != -1 && admitTick < arrivalTick
          || firstTokenTick != -1 && (admitTick == -1 || firstTokenTick < admitTick)) {
        throw new IllegalArgumentException(
            "request "
                + id
                + ": milestones out of order:"
                + " arrived "
                + arrivalTick
                + ", admitted "
                + admitTick
                + ", first token "
                + firstTokenTick
                + " (-1: never)");
      }
      if (cachedTokens.total() > promptTokens) {
        throw new IllegalArgumentException(
            "request "
                + id
                + ": cached tokens "
                + cachedTokens.total()
                + " exceed its prompt of "
                + promptTokens);
      }
    }

    /**
     * Whether its prefill completed.
     *
     * @return true if it has a first-token tick
     */
    public boolean hasFirstToken() {
      return firstTokenTick >= 0;
    }

    /**
     * Ticks it waited in the queue before admission.
     *
     * @return {@code admitTick - arrivalTick}, 0 if never admitted
     */
    public long queuedTicks() {
      return admitTick < 0 ? 0 : admitTick - arrivalTick;
    }

    /**
     * Prompt tokens the model computed, those not reused from a tier.
     *
     * @return {@code promptTokens - cachedTokens.total()}
     */
    public long computedPromptTokens() {
      return promptTokens - cachedTokens.total();
    }
  }

  /** Sizes only: a result's text stays readable in test failures. */
  @Override
  public String toString() {
    return "SimulationTimeline[sampleStride="
        + sampleStride
        + ", samples="
        + samples.size()
        + ", requestStride="
        + requestStride
        + ", requests="
        + requests.size()
        + "]";
  }
}
