package io.kvtier.simulator;

import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RequestListener;
import io.kvtier.core.rank.RequestOutcome;
import io.kvtier.core.rank.TickStep;
import java.util.Objects;

/**
 * One rank's side of a {@link RankFailureInjection}: the hooks the engine calls inside its steps
 * (its collective, its model, its request listener) ask {@link #at} whether to throw now. Armed
 * only on the rank that fails, and only until it fired once; on every other rank, and in every
 * run without an injected failure, {@link #at} returns at its first test.
 *
 * <p>The step in progress is {@link RankEngine#nextStep()}: the engine moves it on only after a
 * step's body returned, so inside a step it names that step.
 */
final class FailureInjector {
  private final RankFailureInjection plan;
  private final int rank;
  private RankEngine engine;
  private boolean armed;
  private long firedAt = -1;

  FailureInjector(RankFailureInjection plan, int rank) {
    this.plan = Objects.requireNonNull(plan, "plan");
    this.rank = rank;
    this.armed = plan.enabled() && plan.rank() == rank;
  }

  /** Whether this rank is the one that fails (fired or not yet). */
  boolean targetsThisRank() {
    return plan.enabled() && plan.rank() == rank;
  }

  /** Whether this rank was to fail and has not, so far. */
  boolean pending() {
    return armed;
  }

  /** The engine whose step and tick decide; set once it exists, before its first step. */
  void attach(RankEngine engine) {
    this.engine = Objects.requireNonNull(engine, "engine");
  }

  /** Throws the injected failure if this is the rank, the step and (at least) the tick. */
  void at() {
    if (!armed || engine == null) {
      return;
    }
    TickStep step = engine.nextStep();
    long tick = engine.tickNumber();
    if (step != plan.step() || tick < plan.tick()) {
      return;
    }
    armed = false;
    firedAt = tick;
    String message =
        "failure injected by "
            + plan.describe()
            + ": rank "
            + rank
            + " fails in step "
            + step
            + " at tick "
            + tick;
    if (plan.kind() == RankFailureInjection.Kind.ERROR) {
      throw new RankFailureInjection.InjectedRankError(message);
    }
    throw new RankFailureInjection.InjectedRankException(message);
  }

  /** The tick at which the failure was thrown, -1 if it was not (yet). */
  long firedAt() {
    return firedAt;
  }

  /**
   * Why an armed injection never fired, for the result of a run that drained first.
   *
   * @param drainedAt the tick after the last one run
   */
  String neverFired(long drainedAt) {
    return "the failure injected by "
        + plan.describe()
        + " never fired: rank "
        + rank
        + " reached no "
        + plan.step()
        + " hook at or after tick "
        + plan.tick()
        + " before the run drained at tick "
        + drainedAt
        + " (see RankFailureInjection for the hook of each step; give an earlier --fail-tick)";
  }

  /** The model of this rank, failing in FORWARD when armed for it. */
  ModelRunner model(ModelRunner model) {
    if (!targetsThisRank()) {
      return model;
    }
    return new ModelRunner() {
      @Override
      public int layers() {
        return model.layers();
      }

      @Override
      public int snapshotSlots() {
        return model.snapshotSlots();
      }

      @Override
      public void writeLayer(ModelStep step, int layer) {
        at();
        model.writeLayer(step, layer);
      }

      @Override
      public int nextToken(ModelStep step) {
        at();
        return model.nextToken(step);
      }

      @Override
      public int verifyPrefix(ModelStep step) {
        at();
        return model.verifyPrefix(step);
      }

      @Override
      public void released(long requestId) {
        at();
        model.released(requestId);
      }
    };
  }

  /** The request listener of this rank: {@code listener}, failing first when armed for it. */
  RequestListener listener(RequestListener listener) {
    if (!targetsThisRank()) {
      return listener;
    }
    return new RequestListener() {
      @Override
      public void arrived(long tick, long id, int promptTokens) {
        at();
        listener.arrived(tick, id, promptTokens);
      }

      @Override
      public void admitted(
          long tick, long id, int deviceHitTokens, int hostHitTokens, int l3HitTokens) {
        at();
        listener.admitted(tick, id, deviceHitTokens, hostHitTokens, l3HitTokens);
      }

      @Override
      public void admitted(
          long tick,
          long id,
          int deviceHitTokens,
          int hostHitTokens,
          int l3HitTokens,
          int usableTokens) {
        at();
        listener.admitted(tick, id, deviceHitTokens, hostHitTokens, l3HitTokens, usableTokens);
      }

      @Override
      public void prefilled(long tick, long id) {
        at();
        listener.prefilled(tick, id);
      }

      @Override
      public void rejected(long tick, long id, String reason) {
        at();
        listener.rejected(tick, id, reason);
      }

      @Override
      public void ended(long tick, long id, RequestOutcome outcome) {
        at();
        listener.ended(tick, id, outcome);
      }
    };
  }
}
