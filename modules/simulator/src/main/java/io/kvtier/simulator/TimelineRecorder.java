package io.kvtier.simulator;

import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.RequestListener;
import io.kvtier.core.rank.RequestOutcome;
import io.kvtier.simulator.SimulationResult.HitTokens;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Builds the {@link SimulationTimeline} of a run on rank 0's thread: the engine's request
 * milestones through {@link RequestListener}, a sample after every tick that is a multiple of the
 * stride, and the progress callback after every tick. Read by the simulator's thread only after
 * rank 0's thread has ended (the join orders the two).
 */
final class TimelineRecorder implements RequestListener {
  private static final HitTokens NO_HITS = new HitTokens(0, 0, 0);

  private final SimulationProgress progress;
  private final long inputTicks;
  private final List<SimulationTimeline.Sample> samples = new ArrayList<>();
  private final Map<Long, Pending> live = new HashMap<>();
  private final List<Pending> ended = new ArrayList<>();
  private long sampleStride = 1;
  private long requestStride = 1;
  private long arrivals;

  /** A request still in the engine; the ordinal decides whether the stride keeps it. */
  private static final class Pending {
    final long ordinal;
    final long id;
    final long arrivalTick;
    final int promptTokens;
    long admitTick = -1;
    long firstTokenTick = -1;
    HitTokens cached = NO_HITS;
    RequestOutcome outcome;

    Pending(long ordinal, long id, long arrivalTick, int promptTokens) {
      this.ordinal = ordinal;
      this.id = id;
      this.arrivalTick = arrivalTick;
      this.promptTokens = promptTokens;
    }

    SimulationTimeline.Request toRequest() {
      return new SimulationTimeline.Request(
          id, arrivalTick, admitTick, firstTokenTick, promptTokens, cached, outcome);
    }
  }

  TimelineRecorder(SimulationProgress progress, long inputTicks) {
    this.progress = progress;
    this.inputTicks = inputTicks;
  }

  @Override
  public void arrived(long tick, long id, int promptTokens) {
    long ordinal = arrivals++;
    if (ordinal % requestStride == 0) {
      live.put(id, new Pending(ordinal, id, tick, promptTokens));
    }
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

  /**
   * A request's cached tokens per tier are the part of its match it resumes from ({@link
   * UsableHits#split}): the match itself without recurrent-state snapshots; with them the pages
   * past the usable length are computed again and not loaded, so the TTFT model must not count
   * them as hits.
   */
  @Override
  public void admitted(
      long tick,
      long id,
      int deviceHitTokens,
      int hostHitTokens,
      int l3HitTokens,
      int usableTokens) {
    Pending p = live.get(id);
    if (p != null) {
      p.admitTick = tick;
      p.cached = UsableHits.split(deviceHitTokens, hostHitTokens, l3HitTokens, usableTokens);
    }
  }

  @Override
  public void prefilled(long tick, long id) {
    Pending p = live.get(id);
    if (p != null) {
      p.firstTokenTick = tick;
    }
  }

  @Override
  public void ended(long tick, long id, RequestOutcome outcome) {
    Pending p = live.remove(id);
    // The stride may have doubled since the request arrived.
    if (p == null || p.ordinal % requestStride != 0) {
      return;
    }
    p.outcome = outcome;
    ended.add(p);
    if (ended.size() >= SimulationTimeline.MAX_REQUESTS) {
      requestStride *= 2;
      ended.removeIf(e -> e.ordinal % requestStride != 0);
    }
  }

  /** After rank 0 completed {@code tick} and passed its checks. */
  void afterTick(long tick, RankEngine engine) {
    boolean drained = engine.isDrained();
    if (tick % sampleStride == 0 || drained) {
      samples.add(sample(tick, engine));
      // The drain's sample comes last: no later decimation may drop the run's end.
      if (!drained && samples.size() >= SimulationTimeline.MAX_SAMPLES) {
        sampleStride *= 2;
        samples.removeIf(s -> s.tick() % sampleStride != 0);
      }
    }
    progress.ticks(tick + 1, inputTicks);
  }

  /**
   * Rank 0 skips ticks {@code from} to {@code to - 1}: the samples and progress they would have
   * given. The engine is idle and stays so over them, so each sample is of its state now.
   */
  void skipped(long from, long to, RankEngine engine) {
    long t = ceilToStride(from);
    while (t < to) {
      samples.add(sample(t, engine));
      if (samples.size() >= SimulationTimeline.MAX_SAMPLES) {
        sampleStride *= 2;
        samples.removeIf(s -> s.tick() % sampleStride != 0);
      }
      t = ceilToStride(t + 1);
    }
    progress.ticks(to, inputTicks);
  }

  private long ceilToStride(long tick) {
    return Math.ceilDiv(tick, sampleStride) * sampleStride;
  }

  private static SimulationTimeline.Sample sample(long tick, RankEngine engine) {
    RankEngineStats s = engine.stats();
    return new SimulationTimeline.Sample(
        tick,
        engine.cache().deviceUsage(),
        engine.cache().hostUsage(),
        s.promptTokens(),
        new HitTokens(s.deviceHitTokens(), s.hostHitTokens(), s.l3HitTokens()),
        s.computedTokens());
  }

  /** The timeline so far: the requests that ended, in arrival order. */
  SimulationTimeline timeline() {
    List<SimulationTimeline.Request> requests =
        ended.stream()
            .sorted((a, b) -> Long.compare(a.ordinal, b.ordinal))
            .map(Pending::toRequest)
            .toList();
    return new SimulationTimeline(sampleStride, samples, requestStride, requests);
  }
}
