package io.kvtier.simulator;

import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankRequest;
import io.kvtier.core.rank.TickCommands;
import io.kvtier.simulator.workload.Request;
import io.kvtier.simulator.workload.Workload;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
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
 */
final class ArrivalFeed {
  private final Iterator<Request> requests;
  private final SplittableRandom random;
  private final SimulationConfig config;
  private final long maxRequests;
  private Request pending;
  private long sent;
  private boolean ended;

  ArrivalFeed(Workload workload, SimulationConfig config) {
    this.requests = workload.requests().iterator();
    this.random = new SplittableRandom(config.seed() ^ 0xA11CE5L);
    this.config = config;
    this.maxRequests = config.requests() == 0 ? Long.MAX_VALUE : config.requests();
  }

  /** The commands of {@code tick}, given rank 0's engine state before the tick. */
  TickCommands next(long tick, RankEngine engine) {
    if (ended) {
      return TickCommands.NONE;
    }
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
        pending = requests.next();
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

  /**
   * Requests of the workload that have not arrived (and, the run over, never will). Reads the
   * rest of the workload to count them: call it once, after the run.
   */
  long unread() {
    long left = pending != null ? 1 : 0;
    pending = null;
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
