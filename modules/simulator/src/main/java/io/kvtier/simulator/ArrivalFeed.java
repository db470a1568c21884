package io.kvtier.simulator;

import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankRequest;
import io.kvtier.core.rank.TickCommands;
import io.kvtier.simulator.workload.Request;
import io.kvtier.simulator.workload.Workload;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.SplittableRandom;

/**
 * Rank 0's view of the outside world: which requests arrive at a tick and which are aborted.
 * Everything it reads is either the workload, its own seeded random stream, or rank 0's
 * replicated engine state, so the commands are a pure function of the seed and the tick.
 *
 * <p>A request arrives no earlier than its workload arrival time (one virtual millisecond per
 * tick), at most {@code arrivalsPerTick} per tick, and only while the engine's waiting queue is
 * shorter than twice {@code maxRunning} (a server's admission control: floods queue outside the
 * engine). An abort picks one live request, waiting or running at any stage, uniformly.
 *
 * <p>Idle ticks: when the engine is idle ({@link RankEngine#isIdle()}) and the next request is
 * not due yet, the feed skips to the tick at which it is due (or the input's last tick, or the
 * tick of an injected failure) and returns that tick's commands with the skip in them ({@link
 * TickCommands#skippedTicks()}). It draws for each skipped tick what that tick would have drawn
 * (the abort draw, which finds no live request), so the commands of every later tick are those
 * of a run without skips.
 */
final class ArrivalFeed {
  private final Iterator<Request> requests;

  /** The workload's request count when its stream knows it (a trace, a generator), else -1. */
  private final long total;

  /** Requests taken from {@link #requests} so far. */
  private long taken;

  private final SplittableRandom random;
  private final SimulationConfig config;
  private final long maxRequests;
  private Request pending;
  private long sent;
  private boolean ended;

  ArrivalFeed(Workload workload, SimulationConfig config) {
    Spliterator<Request> source = workload.requests().spliterator();
    this.total = source.getExactSizeIfKnown();
    this.requests = Spliterators.iterator(source);
    this.random = new SplittableRandom(config.seed() ^ 0xA11CE5L);
    this.config = config;
    this.maxRequests = config.requests() == 0 ? Long.MAX_VALUE : config.requests();
  }

  /**
   * The commands of {@code tick}, given rank 0's engine state before the tick; with a skip, the
   * commands of a later tick, whose {@link TickCommands#skippedTicks()} says how much later.
   */
  TickCommands next(long tick, RankEngine engine) {
    if (ended) {
      return TickCommands.NONE;
    }
    if (config.skipIdleTicks() && engine.isIdle()) {
      long due = idleUntil(tick);
      if (due > tick) {
        for (long t = tick; t < due && config.abortProbability() > 0; t++) {
          // The abort draw of the skipped tick; an idle engine has no live request to abort.
          random.nextDouble();
        }
        return at(due, engine).afterSkipping(due - tick);
      }
    }
    return at(tick, engine);
  }

  /**
   * The first tick from {@code tick} on at which something happens to an idle engine: the next
   * request is due, the input ends ({@code config.ticks()}), or the tick before an injected
   * failure's (so that it fires at its own tick, as without skips).
   */
  private long idleUntil(long tick) {
    if (tick >= config.ticks() || sent >= maxRequests) {
      return tick;
    }
    if (pending == null) {
      if (!requests.hasNext()) {
        return tick;
      }
      pending = take();
    }
    // The first tick whose time in whole milliseconds reaches the arrival (see at()).
    long dueTick = Math.ceilDiv(pending.arrivalMillis() * 1000, AckDelay.TICK_MICROS);
    long due = Math.min(Math.max(dueTick, tick), config.ticks());
    // Up to the tick before an injected failure's: the broadcast of a skip runs at the tick
    // before the skip, so the failure's own tick must be one that starts without a skip.
    long failTick = config.rankFailure().tick();
    if (config.rankFailure().enabled() && failTick > tick) {
      due = Math.max(tick, Math.min(due, failTick - 1));
    }
    return due;
  }

  private TickCommands at(long tick, RankEngine engine) {
    if (tick >= config.ticks()) {
      ended = true;
      return TickCommands.END;
    }
    List<RankRequest> arrivals = new ArrayList<>();
    int room = 2 * config.maxRunning() - engine.waitingRequests();
    long nowMillis = tick * AckDelay.TICK_MICROS / 1000;
    while (arrivals.size() < Math.min(room, config.arrivalsPerTick()) && sent < maxRequests) {
      if (pending == null) {
        if (!requests.hasNext()) {
          break;
        }
        pending = take();
      }
      if (pending.arrivalMillis() > nowMillis) {
        break;
      }
      sent++;
      arrivals.add(new RankRequest(sent, 0, 0, pending.maxOutputTokens(), pending.prompt()));
      pending = null;
    }
    long[] aborts = new long[0];
    if (config.abortProbability() > 0 && random.nextDouble() < config.abortProbability()) {
      long[] live = engine.liveRequestIds();
      if (live.length > 0) {
        aborts = new long[] {live[random.nextInt(live.length)]};
      }
    }
    boolean exhausted = sent >= maxRequests || (pending == null && !requests.hasNext());
    if (exhausted) {
      ended = true;
    }
    return new TickCommands(arrivals, aborts, exhausted);
  }

  private Request take() {
    Request next = requests.next();
    taken++;
    return next;
  }

  /**
   * Requests of the workload that have not arrived (and, the run over, never will): call it once,
   * after the run. A workload whose stream knows its size is counted without reading the rest; any
   * other is read to its end. Making the rest of a Mooncake trace's prompts took seconds, after a
   * failure too, so a rank process that had named a dead rank stayed alive that long.
   */
  long unread() {
    long left = pending != null ? 1 : 0;
    pending = null;
    if (total >= 0) {
      return left + total - taken;
    }
    while (requests.hasNext()) {
      requests.next();
      left++;
    }
    return left;
  }

  /** Requests sent so far. */
  long sent() {
    return sent;
  }
}
