package io.kvtier.core.rank;

import io.kvtier.core.cache.Admission;
import io.kvtier.core.cache.PoolExhaustedException;
import io.kvtier.core.cache.PrefetchOutcome;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.cache.RequestOptions;
import io.kvtier.core.cache.SnapshotTarget;
import io.kvtier.spi.Collective;
import io.kvtier.spi.ReduceOp;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * The replicated request state of a rank and steps 3 to 5 of a tick: the waiting queue and the
 * running list, both in arrival order, admission, the forward pass and finishing.
 *
 * <p>Every decision reads replicated state: queue order, cache outcomes (admission, allocation
 * and {@link PoolExhaustedException} are replicated because pool occupancy is), and committed
 * load-backs. A request waits for its load-backs to be committed by the sync step, not for its
 * copies to land on this rank, so no rank blocks on a rank-local await.
 *
 * <p>With an L3 tier, a waiting request whose prompt goes at least the prefetch threshold beyond
 * its host hit first leaves the queue for the prefetching list; the sync steps advance its
 * prefetch from agreed values only, and once the cache says it is decided the request rejoins
 * the head of the queue and is admitted like any other, its L3 pages now host hits. No
 * collective is issued here: the prefetch's agreement rides in the sync's one reduction.
 */
final class Scheduler {
  private final RankCache cache;
  private final ModelRunner model;
  private final RankEngineConfig config;
  private final EngineCounters counters;
  private final Collective collective;
  private final int pageSize;

  /** Whether requests take recurrent-state snapshots (HYBRID.md §5); the cache keeps the rule. */
  private final boolean snapshots;

  final ArrayDeque<RankRequest> waiting = new ArrayDeque<>();
  final ArrayList<RunningRequest> running = new ArrayList<>();

  /** Requests whose L3 prefetch runs, in start order; they rejoin the queue's head when done. */
  final ArrayList<RankRequest> prefetching = new ArrayList<>();

  /**
   * Finished requests whose prompt is being published ({@link TransferRole#PUBLISH}), in finish
   * order: they end at their publish's agreed commit.
   */
  final ArrayList<RankRequest> publishing = new ArrayList<>();

  /** Requests already considered for a prefetch (never iterated: membership only). */
  private final HashMap<Long, PrefetchOutcome> prefetched = new HashMap<>();

  /** Rank-local, read only by {@link ProtocolDefect#REDUCE_FOR_LOCALLY_LOADED_REQUESTS}. */
  private final LinkedHashSet<Long> locallyLoaded = new LinkedHashSet<>();

  boolean endOfInput;

  /** Told of each request's milestones; {@link RequestListener#NONE} by default. */
  RequestListener listener = RequestListener.NONE;

  Scheduler(
      RankCache cache,
      ModelRunner model,
      RankEngineConfig config,
      EngineCounters counters,
      Collective collective) {
    this.cache = cache;
    this.model = model;
    this.config = config;
    this.counters = counters;
    this.collective = collective;
    this.pageSize = cache.config().pageSize();
    this.snapshots = cache.config().snapshotSlots() > 0;
    this.speculative = snapshots ? 0 : model.speculativeTokens();
    if (speculative < 0) {
      throw new IllegalArgumentException(
          "the model proposes " + speculative + " speculative tokens a step: give 0 or more");
    }
    this.batchDecode = !snapshots && speculative == 0 && model.batchesDecode();
    this.samples = model.samples();
    this.reportsLogprobs = model.reportsLogprobs();
    this.reportsPromptLogprobs = model.reportsPromptLogprobs();
    this.proposals = new int[speculative];
    this.verified = new int[speculative + 1];
  }

  /**
   * Tokens the model's draft proposes per decode step ({@link ModelRunner#speculativeTokens}); 0
   * without a draft, and with recurrent-state snapshots (whose state a rolled-back position would
   * have advanced).
   */
  private final int speculative;

  private final int[] proposals;
  private final int[] verified;

  /**
   * Whether the model samples ({@link ModelRunner#samples}), asked once here: {@link
   * #entryProblem} runs on the caller's thread too ({@link RankEngine#checkRequest}), which must
   * not enter the model's callbacks.
   */
  private final boolean samples;

  /** Whether the model reports log-probabilities ({@link ModelRunner#reportsLogprobs}). */
  private final boolean reportsLogprobs;

  /**
   * Whether the model reports prompt log-probabilities ({@link
   * ModelRunner#reportsPromptLogprobs}).
   */
  private final boolean reportsPromptLogprobs;

  /**
   * Whether this tick's decode steps go to the model together ({@link
   * ModelRunner#batchesDecode}); never with recurrent-state snapshots, whose targets a decode step
   * may carry.
   */
  private final boolean batchDecode;

  /** The decode steps of the tick in progress, batched (reused; empty between ticks). */
  private final ArrayList<RunningRequest> decodes = new ArrayList<>();

  private final ArrayList<ModelStep> decodeSteps = new ArrayList<>();
  private int[] decodeTokens = new int[0];

  // ---------------------------------------------------------------- step 1: commands

  void apply(TickCommands commands, long tick) {
    for (RankRequest r : commands.arrivals()) {
      counters.arrived++;
      listener.arrived(tick, r.id(), r.promptLength());
      // Checked from the request, the replicated config and the replicated queues only, so every
      // rank rejects the same requests at the same tick: nothing a client sends reaches a step
      // that could throw. A duplicate id is rejected too; the live request of that id goes on.
      String problem =
          isLive(r.id())
              ? "a request with id="
                  + r.id()
                  + " is still waiting or running: give every live request its own id"
              : entryProblem(r);
      if (problem != null) {
        counters.rejected++;
        listener.rejected(tick, r.id(), problem);
        listener.ended(tick, r.id(), RequestOutcome.REJECTED);
        continue;
      }
      waiting.addLast(r);
    }
    for (long id : commands.aborts()) {
      abort(id, tick);
    }
    endOfInput |= commands.endOfInput();
  }

  private boolean isLive(long id) {
    for (RankRequest r : waiting) {
      if (r.id() == id) {
        return true;
      }
    }
    for (RankRequest r : prefetching) {
      if (r.id() == id) {
        return true;
      }
    }
    for (RankRequest r : publishing) {
      if (r.id() == id) {
        return true;
      }
    }
    return indexOfRunning(id) >= 0;
  }

  private int indexOfRunning(long id) {
    for (int i = 0; i < running.size(); i++) {
      if (running.get(i).id == id) {
        return i;
      }
    }
    return -1;
  }

  private void abort(long id, long tick) {
    for (Iterator<RankRequest> it = waiting.iterator(); it.hasNext(); ) {
      if (it.next().id() == id) {
        it.remove();
        forgetPrefetch(id);
        counters.aborted++;
        listener.ended(tick, id, RequestOutcome.ABORTED);
        return;
      }
    }
    for (Iterator<RankRequest> it = prefetching.iterator(); it.hasNext(); ) {
      if (it.next().id() == id) {
        it.remove();
        forgetPrefetch(id);
        counters.aborted++;
        listener.ended(tick, id, RequestOutcome.ABORTED);
        return;
      }
    }
    int i = indexOfRunning(id);
    if (i >= 0) {
      release(running.remove(i), false);
      counters.aborted++;
      listener.ended(tick, id, RequestOutcome.ABORTED);
    }
  }

  private void release(RunningRequest r, boolean finish) {
    if (finish) {
      // The admitted array: the cache skips comparing the prefix and checks the output only.
      cache.finish(r.id, r.tokens, r.computed);
    } else {
      cache.abort(r.id);
    }
    locallyLoaded.remove(r.id);
    model.released(r.id);
  }

  // ---------------------------------------------------------------- step 3: admit

  void admit(long tick) {
    requeueFinishedPrefetches();
    while (!waiting.isEmpty() && running.size() < config.maxRunning()) {
      RankRequest r = waiting.peekFirst();
      String tooLarge = poolProblem(r);
      if (tooLarge != null) {
        reject(tick, tooLarge);
        continue;
      }
      if (config.cacheChunks() && waitsForSharedPrefill(r)) {
        // Replicated (the queue and the running requests' progress): the head waits a tick, and
        // the queue behind it with it, so that arrival order holds.
        break;
      }
      // Fits an int now: at most the device pool's tokens, and the entry check bounds the sum.
      int kvTarget = (int) kvTarget(r);
      RequestOptions options =
          new RequestOptions(r.namespace(), r.priority(), config.loadBackQuotaPages());
      int matchable = matchable(r);
      if (cache.hasL3() && !prefetched.containsKey(r.id())) {
        // Replicated: the queue, the tree and the count of prefetches are the same everywhere.
        prefetched.put(r.id(), NO_OUTCOME);
        if (prefetching.size() < config.maxRunning()
            && cache.startPrefetch(
                r.id(), r.promptArray(), matchable, options, r.transfer() == TransferRole.AWAIT)) {
          waiting.pollFirst();
          prefetching.add(r);
          continue;
        }
      }
      // The request's one token array from admission to finish (RunningRequest#tokens).
      int[] tokens = RunningRequest.tokenArray(r);
      Admission admission = cache.admit(r.id(), tokens, matchable, options);
      cache.admittedPrefetch(r.id()).ifPresent(o -> prefetched.put(r.id(), o));
      RunningRequest rr = new RunningRequest(r, tokens, admission, kvTarget);
      try {
        // Prompt pages first, so that a prepared backup covers exactly what the prefill writes.
        cache.allocateTokens(r.id(), r.promptLength());
        rr.prepared =
            config.preparedBackups()
                && r.promptLength() - rr.prefixLength
                    <= Math.min(config.chunkTokens(), config.maxPrefillTokens())
                && r.promptLength() > rr.prefixLength
                && cache.prepareBackup(r.id());
        cache.allocateTokens(r.id(), kvTarget);
      } catch (PoolExhaustedException e) {
        // Replicated: every rank's pool is in the same state, so every rank ends up here.
        cache.abort(r.id());
        if (running.isEmpty() && cache.outstandingOperations() == 0) {
          reject(
              tick,
              "its "
                  + pages(kvTarget)
                  + " pages cannot be allocated even with nothing"
                  + " else running or outstanding (device pool of "
                  + cache.config().devicePages()
                  + " pages)");
          continue;
        }
        return;
      }
      waiting.pollFirst();
      running.add(rr);
      counters.admitted++;
      counters.promptTokens += r.promptLength();
      PrefetchOutcome outcome = prefetched.remove(r.id());
      // Without snapshots the hits are the prefix the request resumes from, split by tier; with
      // them (HYBRID.md §5) the match, and the prefix it resumes from is the usable part of it.
      int hostFrom =
          snapshots ? rr.matchedLength - rr.hostHitLength : rr.prefixLength - rr.hostLoadedLength;
      int hostTo = snapshots ? rr.matchedLength : rr.prefixLength;
      int l3 = outcome == null ? 0 : outcome.overlap(hostFrom, hostTo);
      int host = hostTo - hostFrom - l3;
      counters.deviceHitTokens += hostFrom;
      counters.l3HitTokens += l3;
      counters.hostHitTokens += host;
      counters.usableHitTokens += rr.prefixLength;
      rr.countedDeviceHits = hostFrom;
      rr.countedHostHits = host;
      rr.countedL3Hits = l3;
      // L3 pages reach the device as a load-back from the host like any host hit.
      listener.admitted(tick, r.id(), hostFrom, host, l3, rr.prefixLength);
      if (r.transfer() == TransferRole.AWAIT) {
        awaited(rr, matchable, l3, tick);
      }
    }
  }

  /**
   * Counts what an admitted request that awaits a transfer found of its handle's pages: those
   * its prefetch fetched, and those a hit could cover (every page before the last matchable
   * token) that it found in no tier.
   */
  private void awaited(RunningRequest rr, int matchable, int l3Tokens, long tick) {
    int expected = rr.request.transferPages();
    int coverable = Math.min(expected, matchable / pageSize);
    int fetched = Math.min(l3Tokens / pageSize, expected);
    int recomputed = Math.max(0, coverable - rr.prefixLength / pageSize);
    counters.awaits++;
    counters.transferPagesExpected += expected;
    counters.transferPagesFetched += fetched;
    counters.transferPagesRecomputed += recomputed;
    rr.countedTransferFetched = fetched;
    rr.countedTransferRecomputed = recomputed;
    listener.awaited(tick, rr.id, expected, fetched, recomputed);
  }

  /** Placeholder outcome of a request that was considered and did not prefetch. */
  private static final PrefetchOutcome NO_OUTCOME = new PrefetchOutcome(-1, 0, 0);

  /**
   * Requests whose prefetch is decided go back to the head of the queue, in the order their
   * prefetches started; the state is replicated, so every rank moves the same ones.
   */
  private void requeueFinishedPrefetches() {
    for (int i = prefetching.size() - 1; i >= 0; i--) {
      RankRequest r = prefetching.get(i);
      if (cache.prefetchState(r.id()) == RankCache.PrefetchState.DONE) {
        prefetching.remove(i);
        waiting.addFirst(r);
      }
    }
  }

  /** A request leaves without being admitted: its prefetch (or its outcome) goes. */
  private void forgetPrefetch(long id) {
    if (prefetched.remove(id) != null) {
      cache.cancelPrefetch(id);
    }
  }

  /** The head request can never get its pages: nothing else holds any. Drop it. */
  private void reject(long tick, String why) {
    long id = waiting.pollFirst().id();
    forgetPrefetch(id);
    counters.rejected++;
    listener.rejected(tick, id, why);
    listener.ended(tick, id, RequestOutcome.REJECTED);
  }

  private long pages(long tokens) {
    return (tokens + pageSize - 1) / pageSize;
  }

  /**
   * The prompt tokens a request may match in the cache. The first output token comes from the last
   * prompt token's forward pass, so a request that generates must compute at least that token:
   * all but the last prompt token, or the whole prompt of one that generates nothing; none of one
   * that asks for its prompt's log-probabilities.
   */
  private static int matchable(RankRequest r) {
    if (r.sampling().promptLogprobs()) {
      return 0; // every prompt position's logits are needed, and a cached one has none
    }
    return r.maxOutputTokens() > 0 ? r.promptLength() - 1 : r.promptLength();
  }

  /** Tokens whose KV the request computes: the prompt and each generated token but the last. */
  private static long kvTarget(RankRequest r) {
    return (long) r.promptLength() + Math.max(0, r.maxOutputTokens() - 1);
  }

  /**
   * Why a request cannot enter at all, from the request and the replicated config alone, or
   * null: sampling, penalties, a logit bias or held-back tokens asked of a model that decodes
   * greedily only, log-probabilities (of the prompt too) of a model that does not report them, a
   * token outside the vocabulary (of the prompt, the logit bias or the held-back tokens), or a
   * prompt plus output budget longer than the token array the engine keeps. Namespaces need no
   * check: any long names one.
   */
  String entryProblem(RankRequest r) {
    if (!r.sampling().greedy() && !samples) {
      return "it samples ("
          + r.sampling()
          + ") but the model decodes greedily only: send temperature 0, or serve a model that"
          + " samples";
    }
    if (!r.sampling().penalties().none() && !samples) {
      return "it asks for penalties (" + r.sampling().penalties() + greedyOnly("them");
    }
    LogitBias bias = r.sampling().logitBias();
    if (bias.largestToken() >= cache.config().vocabSize()) {
      return "its logit bias names token "
          + bias.largestToken()
          + ", outside the vocabulary [0, "
          + cache.config().vocabSize()
          + ")";
    }
    if (!bias.none() && !samples) {
      return "it asks for a logit bias (" + bias + greedyOnly("it");
    }
    MinTokens held = r.sampling().minTokens();
    if (held.largestToken() >= cache.config().vocabSize()) {
      return "it holds back token "
          + held.largestToken()
          + ", outside the vocabulary [0, "
          + cache.config().vocabSize()
          + ")";
    }
    if (held.tokens().length >= cache.config().vocabSize()) {
      return "it holds back every token of the vocabulary ("
          + held
          + "): nothing could be chosen before its minimum is generated";
    }
    if (!held.none() && !samples) {
      return "it holds tokens back (" + held + greedyOnly("min_tokens");
    }
    if (r.sampling().promptLogprobs() && !reportsPromptLogprobs) {
      return "it asks for its prompt's log-probabilities but the model does not report them: leave"
          + " them out (echo with logprobs), or serve a model that reports them";
    }
    if (r.sampling().logprobs() >= 0 && !reportsLogprobs) {
      return "it asks for log-probabilities (logprobs="
          + r.sampling().logprobs()
          + ") but the model does not report them: leave them out, or serve a model that reports"
          + " them";
    }
    int vocab = cache.config().vocabSize();
    int[] prompt = r.promptArray();
    for (int i = 0; i < prompt.length; i++) {
      if (prompt[i] >= vocab) {
        return "prompt["
            + i
            + "]="
            + prompt[i]
            + " is outside the vocabulary [0, "
            + vocab
            + ") (kvtier.vocab-size)";
      }
    }
    long total = (long) r.promptLength() + r.maxOutputTokens();
    if (total > MAX_TOKENS) {
      return "prompt ("
          + r.promptLength()
          + " tokens) plus maxOutputTokens ("
          + r.maxOutputTokens()
          + ") is "
          + total
          + " tokens, more than the "
          + MAX_TOKENS
          + " a request may have";
    }
    return null;
  }

  /**
   * The end of the refusal of a logit adjustment that a model without a {@link Sampler} cannot
   * apply, after the adjustment's description.
   */
  private static String greedyOnly(String what) {
    return ") but the model decodes greedily only (its runner does not choose through Sampler):"
        + " leave "
        + what
        + " out, or serve a model that samples";
  }

  /** Why a request can never fit the device pool, or null. */
  String poolProblem(RankRequest r) {
    long pages = pages(kvTarget(r));
    if (pages > cache.config().devicePages()) {
      return "its KV needs "
          + pages
          + " pages (prompt "
          + r.promptLength()
          + " tokens + maxOutputTokens "
          + r.maxOutputTokens()
          + ", "
          + pageSize
          + " tokens a page) but the device pool has "
          + cache.config().devicePages();
    }
    return null;
  }

  /**
   * The fewest prompt tokens a waiting request must share with a running request's prompt, past
   * what that one has computed, to wait for it (SGLang's in-batch prefix check uses 32 too).
   */
  static final int SHARED_PREFILL_MIN_TOKENS = 32;

  /**
   * Whether the waiting request {@code r} shares at least {@link #SHARED_PREFILL_MIN_TOKENS}
   * tokens (and a page) of its prompt with a running request in its namespace whose prefill has
   * not computed them yet: each prefill step inserts its pages (CACHE.md §3), so once that one has
   * taken its step {@code r} matches them instead of computing them beside it. A burst of requests
   * with one system prompt computes it once, the first admitted; the rest wait its step (one
   * tick for a prompt prefilled in one step). Replicated: the queue, the namespaces and the
   * running requests' computed lengths are the same on every rank.
   */
  private boolean waitsForSharedPrefill(RankRequest r) {
    if (r.transfer() == TransferRole.AWAIT) {
      return false;
    }
    int[] prompt = r.promptArray();
    int matchable = matchable(r);
    int least = Math.max(pageSize, SHARED_PREFILL_MIN_TOKENS);
    for (RunningRequest x : running) {
      if (!x.inPrefill() || x.request.namespace() != r.namespace()) {
        continue;
      }
      int limit = Math.min(matchable, x.promptLength);
      // Its whole computed pages are in the tree already: r matches those at admission.
      int inserted = x.computed - x.computed % pageSize;
      if (limit - inserted < least) {
        continue;
      }
      int common = Arrays.mismatch(prompt, 0, limit, x.tokens, 0, limit);
      int shared = common < 0 ? limit : common;
      if (shared - shared % pageSize - inserted >= least) {
        return true;
      }
    }
    return false;
  }

  /** The most tokens (prompt plus output) of a request: the longest int array a JVM allows. */
  static final int MAX_TOKENS = Integer.MAX_VALUE - 8;

  // ---------------------------------------------------------------- step 4: forward

  void forward(long tick) {
    if (config.defect() == ProtocolDefect.REDUCE_FOR_LOCALLY_LOADED_REQUESTS) {
      voteOnLocallyLoaded();
    }
    // The tick's prefill budget, taken in running (admission) order; replicated like the order.
    int prefillBudget = config.maxPrefillTokens();
    for (Iterator<RunningRequest> it = running.iterator(); it.hasNext(); ) {
      RunningRequest r = it.next();
      if (!r.loadsCommitted()) {
        continue;
      }
      if (r.loadFailed()) {
        it.remove();
        release(r, false);
        if (config.onLoadFailure() == LoadFailurePolicy.RECOMPUTE) {
          requeue(r);
          listener.requeued(tick, r.id, r.hostLoadedLength);
        } else {
          counters.loadFailureAborts++;
          listener.ended(tick, r.id, RequestOutcome.LOAD_FAILED);
        }
        continue;
      }
      int prefill = 0;
      if (r.inPrefill()) {
        int remaining = r.promptLength - r.computed;
        prefill = Math.min(remaining, Math.min(config.chunkTokens(), prefillBudget));
        if (prefill == 0 || (r.prepared && prefill < remaining)) {
          // Waits for a later tick's budget: none is left, or a prepared backup's one-step
          // prefill would be split (it fits a whole budget, so it runs once it comes first).
          continue;
        }
        prefillBudget -= prefill;
      }
      boolean first = !r.started;
      if (first) {
        start(r);
      }
      if (batchDecode && !first && decodes(r)) {
        decodes.add(r);
        continue;
      }
      if (speculative > 0 && !first && decodes(r) && speculate(r, tick)) {
        continue;
      }
      step(r, first, tick, prefill);
    }
    if (!decodes.isEmpty()) {
      decodeTogether(tick);
    }
  }

  /**
   * Whether the request's step this tick is a plain decode step: one position past the prompt
   * (the last generated token's KV) and then its next token, as {@link #step} would run it.
   */
  private static boolean decodes(RunningRequest r) {
    return !r.inPrefill()
        && r.computed < r.kvTarget
        && r.computed + 1 == r.promptLength + r.generated
        && r.generated < r.request.maxOutputTokens();
  }

  /**
   * The tick's decode steps in one pass of the model, layer by layer ({@link
   * ModelRunner#writeDecodeLayer}), then their tokens in running order: what {@link #step} does
   * for each, the model's work shared. A decode step streams no backup (its position is past the
   * prompt) and completes no prefill.
   */
  private void decodeTogether(long tick) {
    try {
      for (RunningRequest r : decodes) {
        decodeSteps.add(stepOf(r, r.computed, r.computed + 1, cache.pageTable(r.id)));
      }
      for (int layer = 0; layer < model.layers(); layer++) {
        model.writeDecodeLayer(decodeSteps, layer);
      }
      if (decodeTokens.length < decodes.size()) {
        decodeTokens = new int[decodes.size()];
      }
      for (RunningRequest r : decodes) {
        r.computed++;
        counters.computedTokens++;
      }
      model.nextDecodeTokens(decodeSteps, decodeTokens);
      for (int i = 0; i < decodes.size(); i++) {
        appendToken(decodes.get(i), decodeTokens[i], tick);
      }
    } finally {
      decodes.clear();
      decodeSteps.clear();
    }
  }

  /**
   * One speculative decode step ({@link ModelRunner#speculativeTokens}): the draft proposes up
   * to {@code k} tokens after the request's last token (as many as its output budget leaves room
   * for past the target's own next token), the target computes every layer over the last token
   * and the proposals in one pass and gives its token after each; the longest agreeing run of
   * proposals is kept, then the target's token after it. The request's computed length moves to
   * the end of the kept positions only: the rejected positions' K/V (and their tokens, cleared
   * here) stay past it, where the cache never inserts, backs up or matches them, and the next
   * step writes them again. Returns false, having done nothing, when no proposal fits (the last
   * token), for the plain step to run.
   */
  private boolean speculate(RunningRequest r, long tick) {
    int anchor = r.computed;
    int count = Math.min(speculative, r.request.maxOutputTokens() - r.generated - 1);
    if (count <= 0) {
      return false;
    }
    int[] pageTable = cache.pageTable(r.id);
    long namespace = r.request.namespace();
    model.propose(
        new ModelStep(
            r.id, namespace, r.tokens, anchor, anchor + 1, pageTable, r.request.sampling()),
        count,
        proposals);
    System.arraycopy(proposals, 0, r.tokens, anchor + 1, count);
    ModelStep verify = stepOf(r, anchor, anchor + 1 + count, pageTable);
    for (int layer = 0; layer < model.layers(); layer++) {
      model.writeLayer(verify, layer);
    }
    model.verifyTokens(verify, verified);
    int kept = 0;
    while (kept < count && proposals[kept] == verified[kept]) {
      kept++;
    }
    // Roll back: only positions anchor..anchor+kept hold K/V of final tokens.
    r.computed = anchor + kept + 1;
    java.util.Arrays.fill(r.tokens, anchor + 1, anchor + 1 + count, 0);
    counters.computedTokens += kept + 1;
    int tier =
        SpeculationStats.Tier.of(r.countedDeviceHits, r.countedHostHits, r.countedL3Hits).ordinal();
    counters.specSteps[tier]++;
    counters.specProposed[tier] += count;
    counters.specAccepted[tier] += kept;
    for (int i = 0; i < kept; i++) {
      appendToken(r, proposals[i], tick);
    }
    appendToken(r, verified[kept], tick);
    return true;
  }

  /**
   * A request whose load-back failed goes back to the head of the queue (replicated: the failure
   * was agreed), its admission's counts taken back; the failed prefix has left the cache, so its
   * next admission recomputes it, or with an L3 tier first probes the store for it again.
   */
  private void requeue(RunningRequest r) {
    counters.admitted--;
    counters.promptTokens -= r.promptLength;
    counters.deviceHitTokens -= r.countedDeviceHits;
    counters.hostHitTokens -= r.countedHostHits;
    counters.l3HitTokens -= r.countedL3Hits;
    counters.usableHitTokens -= r.prefixLength;
    counters.loadFailureRecomputes++;
    counters.loadFailureLostTokens += r.hostLoadedLength;
    if (r.request.transfer() == TransferRole.AWAIT) {
      counters.awaits--;
      counters.transferPagesExpected -= r.request.transferPages();
      counters.transferPagesFetched -= r.countedTransferFetched;
      counters.transferPagesRecomputed -= r.countedTransferRecomputed;
    }
    waiting.addFirst(r.request);
  }

  private void start(RunningRequest r) {
    r.started = true;
    locallyLoaded.remove(r.id);
    if (config.verifyByRecompute() && r.verifyOnStart && r.prefixLength > 0) {
      int mismatches =
          model.verifyPrefix(
              new ModelStep(
                  r.id, r.request.namespace(), r.tokens, 0, r.prefixLength, cache.pageTable(r.id)));
      counters.kvVerifiedPages += r.prefixLength / pageSize;
      counters.kvMismatches += mismatches;
    }
  }

  /**
   * One step of a request: {@code prefill} prompt tokens while it is in prefill (its share of
   * the tick's budget, at least 1), else one decode position.
   */
  private void step(RunningRequest r, boolean first, long tick, int prefill) {
    int from = r.computed;
    int to = r.inPrefill() ? from + prefill : r.computed < r.kvTarget ? from + 1 : from;
    int[] pageTable = cache.pageTable(r.id);
    ModelStep step =
        snapshots
            ? new ModelStep(
                r.id,
                r.request.namespace(),
                r.tokens,
                from,
                to,
                pageTable,
                first && from > 0 ? cache.resumeSlots(r.id) : NO_SLOTS,
                snapshotsOf(cache.stepSnapshots(r.id, from, to)),
                r.request.sampling(),
                r.logprobs,
                r.promptLength)
            : stepOf(r, from, to, pageTable);
    if (to > from) {
      boolean stream = r.prepared && from < r.promptLength;
      int streamed = 0;
      for (int layer = 0; layer < model.layers(); layer++) {
        model.writeLayer(step, layer);
        int block = stream ? model.streamedBlock(layer) : -1;
        if (block >= 0) {
          cache.streamLayer(r.id, block);
          streamed = block + 1;
        }
      }
      // Blocks no layer named (final only after the last layer, ModelRunner.streamedBlock).
      for (int block = streamed; stream && block < model.pageBlocks(); block++) {
        cache.streamLayer(r.id, block);
      }
      if (from < r.promptLength && r.request.sampling().promptLogprobs()) {
        promptLogprobs(r, step, to, tick);
      }
      r.computed = to;
      counters.computedTokens += to - from;
      if (from < r.promptLength) {
        counters.prefillTokens += to - from;
      }
      if (config.cacheChunks() && from < r.promptLength) {
        // Every prefill step's whole pages join the tree now, the last chunk's (and a prepared
        // prompt's, whose backup attaches here) too: a request that comes while this one decodes
        // matches its prompt instead of computing it again.
        cache.cacheChunk(r.id, r.computed);
      }
    }
    if (r.computed == r.promptLength + r.generated && r.generated < r.request.maxOutputTokens()) {
      appendToken(r, model.nextToken(step), tick);
    }
    // Once per request: the step that completes the prompt, or the first step of a request whose
    // whole prompt was cached (one that generates nothing may match all of it).
    if (r.computed >= r.promptLength && (first || from < r.promptLength)) {
      listener.prefilled(tick, r.id);
    }
  }

  /**
   * The prompt log-probabilities of a prefill step: recorded by the model, and once the step
   * completes the prompt, taken and reported in order (the prompt's tokens 1 to its end).
   */
  private void promptLogprobs(RunningRequest r, ModelStep step, int to, long tick) {
    model.recordPromptLogprobs(step);
    if (to < r.promptLength) {
      return;
    }
    List<TokenLogprob> prompt = new ArrayList<>(r.promptLength - 1);
    for (int p = 1; p < r.promptLength; p++) {
      TokenLogprob lp = r.logprobs.take(p);
      if (lp == null) {
        throw new IllegalStateException(
            "request id="
                + r.id
                + " asked for its prompt's log-probabilities but the model recorded none for"
                + " position "
                + p
                + ": a runner that reportsPromptLogprobs() records every prompt position its"
                + " prefill steps predict (ModelRunner.recordPromptLogprobs)");
      }
      prompt.add(lp);
    }
    listener.promptLogprobs(tick, r.id, prompt);
  }

  /** The model's next token joins the request's output, counted and reported. */
  private void appendToken(RunningRequest r, int token, long tick) {
    r.tokens[r.promptLength + r.generated] = token;
    TokenLogprob logprob = r.logprobs.take(r.promptLength + r.generated);
    r.generated++;
    counters.generatedTokens++;
    listener.token(tick, r.id, token, logprob);
  }

  private static final int[] NO_SLOTS = new int[0];

  /**
   * The step of {@code r} over {@code [from, to)} that neither resumes recurrent state nor takes a
   * snapshot, with the request's sampling, log-probability record and prompt length.
   */
  private static ModelStep stepOf(RunningRequest r, int from, int to, int[] pageTable) {
    return new ModelStep(
        r.id,
        r.request.namespace(),
        r.tokens,
        from,
        to,
        pageTable,
        NO_SLOTS,
        List.of(),
        r.request.sampling(),
        r.logprobs,
        r.promptLength);
  }

  /** The cache's snapshot targets as the model's: the cache decides, the scheduler passes. */
  private static List<ModelStep.Snapshot> snapshotsOf(List<SnapshotTarget> targets) {
    if (targets.isEmpty()) {
      return List.of();
    }
    List<ModelStep.Snapshot> out = new ArrayList<>(targets.size());
    for (SnapshotTarget t : targets) {
      out.add(new ModelStep.Snapshot(t.position(), t.slots()));
    }
    return out;
  }

  /** The defect of class 4: a reduction per request in a rank-local map. */
  private void voteOnLocallyLoaded() {
    for (RunningRequest r : running) {
      if (!r.started && !r.pendingLoads.isEmpty() && r.loadsCopiedLocally(cache)) {
        locallyLoaded.add(r.id);
      }
    }
    for (long id : locallyLoaded) {
      collective.allReduce(ReduceOp.MAX, new long[] {id}, "loaded-vote");
    }
  }

  // ---------------------------------------------------------------- step 5: finish

  void finish(long tick) {
    // Publishes advance on what this tick's sync committed, in the order they started.
    for (Iterator<RankRequest> it = publishing.iterator(); it.hasNext(); ) {
      RankRequest r = it.next();
      if (published(r, tick)) {
        it.remove();
      }
    }
    for (Iterator<RunningRequest> it = running.iterator(); it.hasNext(); ) {
      RunningRequest r = it.next();
      if (r.started && r.done()) {
        it.remove();
        release(r, true);
        if (r.request.transfer() == TransferRole.PUBLISH) {
          // The prompt's full pages, locked from here until the publish's agreed end.
          cache.publish(r.id, r.request.namespace(), r.tokens, r.promptLength / pageSize);
          if (!published(r.request, tick)) {
            publishing.add(r.request);
          }
          continue;
        }
        counters.finished++;
        listener.ended(tick, r.id, RequestOutcome.FINISHED);
      }
    }
  }

  /**
   * Advances a request's publish; once it has ended, reports it and the request's end and
   * returns true.
   */
  private boolean published(RankRequest r, long tick) {
    int pages = cache.publishProgress(r.id());
    if (pages < 0) {
      return false;
    }
    counters.publishes++;
    counters.pagesPublished += pages;
    if (pages < r.promptLength() / pageSize) {
      counters.publishFailures++;
    }
    counters.finished++;
    listener.published(tick, r.id(), pages);
    listener.ended(tick, r.id(), RequestOutcome.FINISHED);
    return true;
  }

  // ---------------------------------------------------------------- replicated state

  boolean idle() {
    return waiting.isEmpty() && running.isEmpty() && prefetching.isEmpty() && publishing.isEmpty();
  }

  long[] liveIds() {
    long[] ids = new long[waiting.size() + prefetching.size() + running.size() + publishing.size()];
    int i = 0;
    for (RankRequest r : waiting) {
      ids[i++] = r.id();
    }
    for (RankRequest r : prefetching) {
      ids[i++] = r.id();
    }
    for (RunningRequest r : running) {
      ids[i++] = r.id;
    }
    for (RankRequest r : publishing) {
      ids[i++] = r.id();
    }
    return ids;
  }

  void digest(Digest d) {
    d.add(endOfInput).add(waiting.size());
    for (RankRequest r : waiting) {
      d.add(r.id());
    }
    d.add(prefetching.size());
    for (RankRequest r : prefetching) {
      d.add(r.id());
    }
    d.add(running.size());
    for (RunningRequest r : running) {
      d.add(r.id).add(r.computed).add(r.generated).add(r.prepared).add(r.started);
    }
    // Only while any is publishing, so that a run without transfers keeps its digest.
    if (!publishing.isEmpty()) {
      d.add(publishing.size());
      for (RankRequest r : publishing) {
        d.add(r.id());
      }
    }
  }
}
