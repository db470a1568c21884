package io.kvtier.serving;

import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.RankRequest;
import io.kvtier.core.rank.RequestListener;
import io.kvtier.core.rank.RequestOutcome;
import io.kvtier.core.rank.TickCommands;
import io.kvtier.core.rank.TokenLogprob;
import io.kvtier.core.rank.TransferRole;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The {@link GenerationEngine} of {@code kvtier serve}: rank 0's thread drives its {@link
 * RankEngine}, the one rank loop, with continuous batching. Each tick it hands the requests
 * submitted since the last tick to the engine as arrivals (the engine broadcasts them to every
 * rank), and the cancels as aborts; the engine admits, loads back, prefetches from L3, runs the
 * model on up to {@code maxRunning} requests (a chunk of prefill or one decode token each) and
 * finishes, exactly as in {@code simulate}. The other ranks of the group, threads of this process
 * or processes of their own, follow rank 0's broadcasts ({@link #follow}).
 *
 * <p>Streams are called after the tick, on rank 0's thread, in the order the tick produced: a
 * slow or failing stream delays the next tick but cannot fail a step of the engine.
 *
 * <p>When idle (nothing live, nothing copying: {@link RankEngine#isIdle()}) the thread does not
 * tick: it parks until a submission, a cancel, a task or close wakes it, and the other ranks
 * wait for its next broadcast with no watchdog, ended only by the collective's own failure
 * detection (ARCHITECTURE.md §6, "Idle"). An idle group makes no collective calls.
 */
final class RankGroupEngine implements GenerationEngine {
  private static final System.Logger LOG = System.getLogger(RankGroupEngine.class.getName());

  /** The first pause after a tick without progress, doubled up to {@link #MAX_POLL_NANOS}. */
  private static final long POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(20);

  private static final long MAX_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** Arrivals per tick at most, so that one tick's broadcast stays small. */
  private static final int MAX_ARRIVALS_PER_TICK = 256;

  private final ServingModel model;
  private final EngineSettings settings;
  private final int ranks;
  private final Object lock = new Object();
  private final ConcurrentLinkedQueue<Live> submitted = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<Live> cancels = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private volatile long stallNanos;
  private final AtomicInteger waiting = new AtomicInteger();
  private final AtomicLong ids = new AtomicLong();
  private final CompletableFuture<Void> ready = new CompletableFuture<>();
  private final CountDownLatch done = new CountDownLatch(1);
  private final List<Thread> followers = new ArrayList<>();
  private volatile Thread thread;
  private volatile boolean closing;
  private volatile Pause pause;

  /** A hold of rank 0's thread between two ticks, for tests. */
  private record Pause(CountDownLatch entered, CountDownLatch release) {}

  /** Set once by rank 0's thread when the group failed; every later submission throws it. */
  private volatile RuntimeException failure;

  /** Set under {@link #lock} when rank 0's thread takes no more submissions. */
  private boolean stopped;

  // Set by rank 0's thread before ready completes, read after.
  private RankSlot slot;
  private int contextLimit;
  private EngineStats stats;

  // Rank 0's thread only.
  private final Map<Long, Live> live = new HashMap<>();
  private final List<Live> touched = new ArrayList<>();
  private final Listener listener = new Listener();

  RankGroupEngine(ServingModel model, EngineSettings settings, int ranks) {
    this.model = Objects.requireNonNull(model, "model");
    this.settings = Objects.requireNonNull(settings, "settings");
    this.ranks = ranks;
    this.stallNanos = settings.stallTimeout().toNanos();
  }

  /** Starts a follower thread of this process; {@link #close} waits for it. */
  void addFollower(Thread follower) {
    followers.add(follower);
    follower.start();
  }

  /** Rank 0's thread: opened the slot, now serves until closed or failed. */
  void serve(RankSlot opened) {
    thread = Thread.currentThread();
    slot = opened;
    contextLimit =
        (int)
            Math.min(
                model.maxContext(),
                (long) opened.cache.config().devicePages() * opened.cache.config().pageSize());
    stats =
        new EngineStats(
            opened.cache.deviceUsage(),
            opened.cache.hostUsage(),
            opened.cache.stats(),
            opened.cache.l3Stats(),
            opened.store,
            ranks,
            opened.runner.speculativeTokens() > 0);
    opened.engine.setRequestListener(listener);
    ready.complete(null);
    RuntimeException cause = null;
    try {
      loop();
    } catch (RuntimeException e) {
      cause = e;
    } catch (Error e) {
      cause = new IllegalStateException("the engine thread failed: " + e, e);
    } finally {
      end(cause);
    }
  }

  /** Rank 0 failed to open: {@link GenerationEngines} throws this from the factory. */
  void failedToOpen(Throwable e) {
    ready.completeExceptionally(e);
    done.countDown();
  }

  /** Waits until rank 0 serves, or throws why it could not open. */
  void awaitReady() {
    try {
      ready.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      close();
      throw new IllegalStateException("interrupted while the rank group opened", e);
    } catch (ExecutionException e) {
      close();
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException("rank 0 failed to open: " + e.getCause(), e.getCause());
    }
  }

  /**
   * A follower rank's loop: ticks on rank 0's broadcasts until the group drained (rank 0 ended
   * the input) or failed.
   *
   * @param engine the follower's engine
   * @throws RuntimeException the group's failure
   */
  static void follow(RankEngine engine) {
    while (!engine.isDrained()) {
      engine.tick(null);
    }
  }

  // ---------------------------------------------------------------- the loop (rank 0)

  private void loop() throws RuntimeException {
    RankEngine engine = slot.engine;
    Progress progress = progress(engine.stats());
    long progressAt = System.nanoTime();
    long poll = POLL_NANOS;
    boolean endSent = false;
    while (true) {
      Pause held = pause;
      if (held != null) {
        pause = null;
        held.entered().countDown();
        awaitQuietly(held.release());
      }
      Runnable task;
      while ((task = tasks.poll()) != null) {
        task.run();
      }
      if (awaitsWork(engine)) {
        stats.recordIdle(true);
        LockSupport.park(this);
        Thread.interrupted(); // an unpark by interrupt is only a wake-up
        continue;
      }
      stats.recordIdle(false);
      List<RankRequest> arrivals = new ArrayList<>();
      Live next;
      while (!endSent
          && arrivals.size() < MAX_ARRIVALS_PER_TICK
          && (next = pollSubmitted()) != null) {
        live.put(next.id, next);
        arrivals.add(next.request);
      }
      List<Long> aborts = new ArrayList<>();
      Live cancelled;
      List<Live> later = new ArrayList<>();
      while ((cancelled = cancels.poll()) != null) {
        if (live.containsKey(cancelled.id)) {
          aborts.add(cancelled.id);
        } else if (!cancelled.delivered) {
          later.add(cancelled); // still in the submissions: abort it once it has arrived
        }
      }
      cancels.addAll(later);
      boolean end = false;
      if (closing && !endSent) {
        end = true;
        for (Live l : live.values()) {
          if (!aborts.contains(l.id)) {
            aborts.add(l.id);
          }
          l.failure =
              new IllegalStateException(
                  "the engine closed before request id=" + l.id + " finished: send it again");
        }
      }
      long stepsBefore = slot.runner.steps();
      engine.tick(
          new TickCommands(arrivals, aborts.stream().mapToLong(Long::longValue).toArray(), end));
      endSent |= end;
      int advanced = (int) (slot.runner.steps() - stepsBefore);
      // The stats first: a client that has its answer and then reads /metrics must find it counted.
      stats.recordTick(advanced, engine.runningRequests(), waiting.get());
      RankEngineStats counts = engine.stats();
      stats.recordUsage(
          slot.cache.deviceUsage(),
          slot.cache.hostUsage(),
          slot.cache.stats(),
          slot.cache.l3Stats(),
          slot.cache.checkedHostBlocks(),
          slot.cache.hostChecksumMismatches(),
          counts.loadFailureRecomputes(),
          counts.loadFailureLostTokens());
      if (stats.speculative()) {
        stats.recordSpeculation(engine.speculation());
      }
      deliver();
      if (endSent && engine.isDrained()) {
        return;
      }
      Progress now = progress(counts);
      boolean progressed = !now.equals(progress);
      if (progressed || arrivals.size() > 0) {
        progress = now;
        progressAt = System.nanoTime();
        poll = POLL_NANOS;
      } else if (endSent && System.nanoTime() - progressAt > stallNanos) {
        // Closing, and a copy never finishes: stop rather than hold close() forever; the other
        // ranks then stop at their collective watchdog.
        throw new IllegalStateException(
            "the engine closed without draining: no copy finished for "
                + TimeUnit.NANOSECONDS.toMillis(stallNanos)
                + " ms ("
                + slot.cache.outstandingOperations()
                + " copies outstanding); a transfer or the L3 store is stuck");
      } else if (!live.isEmpty() && System.nanoTime() - progressAt > stallNanos) {
        abortStalled(engine);
        progressAt = System.nanoTime();
      }
      if (endSent) {
        if (!progressed) {
          LockSupport.parkNanos(poll);
          poll = Math.min(poll * 2, MAX_POLL_NANOS);
        }
      } else if (awaitsWork(engine)) {
        continue; // parks at the top, after the tasks
      } else if (!progressed && submitted.isEmpty() && cancels.isEmpty() && !closing) {
        LockSupport.parkNanos(poll);
        poll = Math.min(poll * 2, MAX_POLL_NANOS);
      }
      Thread.interrupted(); // an unpark by interrupt is only a wake-up
    }
  }

  /**
   * Whether rank 0 has nothing to tick for: the group is idle (replicated, so the other ranks wait
   * without a watchdog) and nothing waits to be sent, run or paused. The first tick always runs:
   * the other ranks wait for it with the watchdog, until the group has met once.
   */
  private boolean awaitsWork(RankEngine engine) {
    return !closing
        && engine.tickNumber() > 0
        && engine.isIdle()
        && live.isEmpty()
        && submitted.isEmpty()
        && cancels.isEmpty()
        && tasks.isEmpty()
        && pause == null;
  }

  private Live pollSubmitted() {
    return submitted.poll();
  }

  private void abortStalled(RankEngine engine) {
    IllegalStateException stalled =
        new IllegalStateException(
            "no request made progress for "
                + TimeUnit.NANOSECONDS.toMillis(stallNanos)
                + " ms ("
                + engine
                + ", "
                + slot.cache.outstandingOperations()
                + " copies outstanding): a transfer or the L3 store is stuck; the live requests"
                + " were aborted, send them again");
    for (Live l : live.values()) {
      if (l.failure == null) {
        l.failure = stalled;
      }
      cancels.add(l);
    }
  }

  /** The progress that {@code s}, the engine's counters after a tick, and the cache show. */
  private Progress progress(RankEngineStats s) {
    return new Progress(
        s.arrived(),
        s.admitted(),
        s.finished() + s.aborted() + s.rejected() + s.loadFailureAborts(),
        s.computedTokens(),
        s.generatedTokens(),
        slot.cache.outstandingOperations());
  }

  /** What a tick that makes progress changes. */
  private record Progress(
      long arrived, long admitted, long ended, long computed, long generated, int outstanding) {}

  /** Calls the streams of the requests this tick touched, in the order it touched them. */
  private void deliver() {
    for (Live l : touched) {
      l.touched = false;
      try {
        l.deliver();
      } catch (RuntimeException | Error e) {
        LOG.log(
            System.Logger.Level.WARNING,
            "the stream of request id=" + l.id + " threw; the request is cancelled",
            e);
        l.cancel();
      }
      if (l.delivered) {
        live.remove(l.id);
      }
    }
    touched.clear();
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Rank 0's thread ends: fails what is left with the group's failure or a closed cause. */
  private void end(RuntimeException cause) {
    List<Live> left = new ArrayList<>(live.values());
    synchronized (lock) {
      stopped = true;
      if (cause != null) {
        failure = cause;
      }
    }
    Live l;
    while ((l = submitted.poll()) != null) {
      left.add(l);
    }
    Runnable task;
    while ((task = tasks.poll()) != null) {
      if (task instanceof java.util.concurrent.Future<?> f) {
        f.cancel(false);
      }
    }
    RuntimeException why =
        cause != null
            ? cause
            : new IllegalStateException("the engine closed before the request finished");
    for (Live each : left) {
      each.failNow(each.failure != null && cause == null ? each.failure : why);
    }
    live.clear();
    if (cause != null) {
      LOG.log(System.Logger.Level.ERROR, "the rank group failed; the server stops serving", cause);
    }
    try {
      slot.close();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "closing rank 0 failed", e);
    } finally {
      done.countDown();
    }
  }

  // ---------------------------------------------------------------- GenerationEngine

  @Override
  public int vocabularySize() {
    return model.vocabularySize();
  }

  @Override
  public ModelText text() {
    return model.text();
  }

  @Override
  public boolean cachesPrefixes() {
    return settings.prefixCaching();
  }

  @Override
  public int contextLimit() {
    return contextLimit;
  }

  @Override
  public Generation submit(GenerationRequest request, TokenStream stream) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(stream, "stream");
    int[] prompt = request.prompt();
    model.checkRequest(prompt, request.maxTokens(), contextLimit);
    Live l;
    synchronized (lock) {
      if (failure != null) {
        throw failure;
      }
      if (closing || stopped) {
        throw new IllegalStateException("the engine is closed: it takes no more requests");
      }
      if (request.transfer() != TransferRole.NONE && !settings.prefixCaching()) {
        throw new IllegalArgumentException(
            "a prompt KV transfer ("
                + request.transfer()
                + ") needs prefix caching: this engine gives every request a cache namespace of"
                + " its own");
      }
      long id = ids.getAndIncrement();
      // Without prefix caching a namespace of its own per request: nothing matches another's.
      // (Tenants' namespaces have their top bit set, so they never meet these small ones.)
      RankRequest r =
          new RankRequest(
              id,
              settings.prefixCaching() ? request.namespace() : id + 1,
              0,
              request.maxTokens(),
              prompt,
              request.transfer(),
              request.transferPages(),
              request.sampling());
      slot.engine.checkRequest(r);
      int w = waiting.get();
      if (w >= settings.queueCapacity()) {
        throw new EngineBusyException(
            "the waiting queue is full ("
                + w
                + " requests wait for admission, --queue "
                + settings.queueCapacity()
                + "): retry later");
      }
      waiting.incrementAndGet();
      l = new Live(r, stream);
      l.submittedNanos = System.nanoTime();
      submitted.add(l);
    }
    LockSupport.unpark(thread);
    return l::cancel;
  }

  @Override
  public EngineStats stats() {
    return stats;
  }

  /**
   * Holds rank 0's thread before its next tick until {@code release} opens; for tests.
   *
   * @return opens when the thread is held
   */
  CountDownLatch pause(CountDownLatch release) {
    Pause p = new Pause(new CountDownLatch(1), Objects.requireNonNull(release, "release"));
    pause = p;
    LockSupport.unpark(thread);
    return p.entered();
  }

  /** Shortens the no-progress bound, for tests of a stuck copy. */
  void stallTimeout(java.time.Duration timeout) {
    stallNanos = timeout.toNanos();
  }

  /**
   * Runs {@code action} on rank 0's thread between two ticks and returns its result: how tests
   * look at rank 0's cache, which only that thread may touch.
   *
   * @throws IllegalStateException if rank 0's thread has ended
   */
  <T> T onEngineThread(java.util.function.Function<RankSlot, T> action)
      throws InterruptedException {
    java.util.concurrent.FutureTask<T> task =
        new java.util.concurrent.FutureTask<>(() -> action.apply(slot));
    synchronized (lock) {
      if (stopped) {
        throw new IllegalStateException("rank 0's thread has ended", failure);
      }
      tasks.add(task);
    }
    LockSupport.unpark(thread);
    try {
      return task.get();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      if (e.getCause() instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  /**
   * Waits until nothing is live and every copy has committed: the cache is idle.
   *
   * @throws IllegalStateException if that takes longer than the no-progress bound
   */
  void drain() throws InterruptedException {
    long deadline = System.nanoTime() + stallNanos;
    while (onEngineThread(s -> live.size() + s.cache.outstandingOperations()) > 0) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "the engine did not drain within "
                + TimeUnit.NANOSECONDS.toMillis(stallNanos)
                + " ms: a copy is stuck");
      }
      Thread.sleep(1);
    }
  }

  /** Collective calls of rank 0 with a tag, for tests. */
  long collectiveCalls(String tag) {
    return slot.engine.collective().calls(tag);
  }

  /** The rank 0 engine's counters, for tests; racy but each field whole. */
  RankEngineStats engineStats() {
    return slot.engine.stats();
  }

  /**
   * Ends the input: live generations are aborted and fail with a closed-engine cause, the group
   * drains its copies and every rank stops; waits for rank 0's thread and the follower threads.
   */
  @Override
  public void close() {
    synchronized (lock) {
      closing = true;
    }
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
    }
    boolean interrupted = false;
    while (true) {
      try {
        done.await();
        for (Thread f : followers) {
          f.join();
        }
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** The group's failure, once rank 0 saw it. */
  RuntimeException failure() {
    return failure;
  }

  // ---------------------------------------------------------------- one request

  /** A submitted generation, from submission to its stream's end. */
  private final class Live {
    final long id;
    final RankRequest request;
    final TokenStream stream;
    final int maxTokens;
    final int[] tokens;

    /** Each token's log-probabilities, where the request asked for them; else null. */
    final TokenLogprob[] logprobs;

    /** The prompt's log-probabilities, once reported (where the request asked); else null. */
    List<TokenLogprob> promptLogprobs;

    boolean promptLogprobsSent;

    final AtomicBoolean cancelRequested = new AtomicBoolean();
    int generated;
    int sent;
    boolean admitted;
    boolean admittedSent;
    boolean counted = true; // in waiting until admitted or ended
    int deviceHits;
    int hostHits;
    int l3Hits;

    /** The prefix the request resumed from (HYBRID.md §5): the cached tokens it reports. */
    int usable;

    /** Transfer milestones in nanoseconds (TransferOutcome); page counts below: -1 until known. */
    long submittedNanos;

    long admittedNanos;
    long prefilledNanos;
    long publishedNanos;
    int pagesPublished = -1;
    int pagesExpected = -1;
    int pagesFetched;
    int pagesRecomputed;

    String rejection;
    RequestOutcome outcome;
    RuntimeException failure;
    boolean touched;
    boolean delivered;

    Live(RankRequest request, TokenStream stream) {
      this.id = request.id();
      this.request = request;
      this.stream = stream;
      this.maxTokens = request.maxOutputTokens();
      this.tokens = new int[maxTokens];
      this.logprobs = request.sampling().logprobs() >= 0 ? new TokenLogprob[maxTokens] : null;
    }

    void cancel() {
      if (cancelRequested.compareAndSet(false, true)) {
        cancels.add(this);
        Thread t = thread;
        if (t != null) {
          LockSupport.unpark(t);
        }
      }
    }

    void touch() {
      if (!touched) {
        touched = true;
        touchedAdd(this);
      }
    }

    void leaveWaiting() {
      if (counted) {
        counted = false;
        waiting.decrementAndGet();
      }
    }

    /** Back in the waiting queue after a failed load-back, until admitted again. */
    void reenterWaiting() {
      if (!counted) {
        counted = true;
        waiting.incrementAndGet();
      }
    }

    void deliver() {
      if (delivered) {
        return;
      }
      if (admitted && !admittedSent) {
        admittedSent = true;
        stream.admitted(usableTokens(), deviceHits, hostHits, l3Hits);
      }
      if (promptLogprobs != null && !promptLogprobsSent) {
        promptLogprobsSent = true;
        stream.promptLogprobs(promptLogprobs);
      }
      while (sent < Math.min(generated, maxTokens)) {
        stream.token(tokens[sent], logprobs == null ? null : logprobs[sent]);
        sent++;
      }
      if (outcome == null) {
        return;
      }
      delivered = true;
      switch (outcome) {
        case FINISHED -> finish();
        case ABORTED -> {
          if (failure != null) {
            stream.failed(failure);
          } else {
            finish();
          }
        }
        case LOAD_FAILED -> {
          stats.recordLoadFailure();
          stream.failed(
              new RequestFailedException(
                  RequestOutcome.LOAD_FAILED,
                  "request id="
                      + id
                      + " was aborted because a load-back of its cached prefix from the"
                      + " host tier failed to copy: send it again"));
        }
        case REJECTED -> {
          stats.recordPoolExhausted();
          stream.failed(
              new RequestFailedException(
                  RequestOutcome.REJECTED, "request id=" + id + " was rejected: " + rejection));
        }
      }
    }

    private void finish() {
      int n = Math.min(generated, maxTokens);
      for (int i = 0; logprobs != null && i < n; i++) {
        if (logprobs[i] == null) {
          throw new IllegalStateException(
              "request id="
                  + id
                  + " asked for log-probabilities but the model reported none for its token "
                  + i
                  + ": a runner that reportsLogprobs() chooses every token through"
                  + " Sampler.choose(logits, from, length, step, position)");
        }
      }
      Completion c =
          new Completion(
              java.util.Arrays.copyOf(tokens, n),
              usableTokens(),
              deviceHits,
              hostHits,
              l3Hits,
              transferOutcome(),
              logprobs == null ? List.of() : java.util.Arrays.asList(logprobs).subList(0, n),
              promptLogprobs == null ? List.of() : promptLogprobs);
      stats.recordCompletion(request.promptLength(), c);
      stream.finished(c);
    }

    private TransferOutcome transferOutcome() {
      return switch (request.transfer()) {
        case NONE -> TransferOutcome.NONE;
        case PUBLISH ->
            new TransferOutcome(
                Math.max(0, pagesPublished),
                -1,
                0,
                0,
                Math.max(0, publishedNanos - prefilledNanos));
        case AWAIT ->
            new TransferOutcome(
                -1,
                Math.max(0, pagesExpected),
                pagesFetched,
                pagesRecomputed,
                Math.max(0, admittedNanos - submittedNanos));
      };
    }

    /** The part of the match the model resumes from: the cached tokens it reports. */
    private int usableTokens() {
      return usable;
    }

    void failNow(RuntimeException cause) {
      leaveWaiting();
      if (delivered) {
        return;
      }
      delivered = true;
      try {
        stream.failed(cause);
      } catch (RuntimeException | Error e) {
        LOG.log(System.Logger.Level.WARNING, "the stream of request id=" + id + " threw", e);
      }
    }
  }

  private void touchedAdd(Live l) {
    touched.add(l);
  }

  /** Rank 0's engine reports here, inside the tick; streams are called after it. */
  private final class Listener implements RequestListener {
    @Override
    public void promptLogprobs(long tick, long requestId, List<TokenLogprob> logprobs) {
      Live l = live.get(requestId);
      if (l != null) {
        l.promptLogprobs = List.copyOf(logprobs);
        l.touch();
      }
    }

    @Override
    public void token(long tick, long requestId, int token, TokenLogprob logprob) {
      Live l = live.get(requestId);
      if (l != null) {
        if (l.generated < l.maxTokens) {
          l.tokens[l.generated] = token;
          if (l.logprobs != null) {
            l.logprobs[l.generated] = logprob;
          }
        }
        l.generated++;
        l.touch();
      }
    }

    @Override
    public void admitted(
        long tick,
        long requestId,
        int deviceHitTokens,
        int hostHitTokens,
        int l3HitTokens,
        int usableTokens) {
      Live l = live.get(requestId);
      if (l != null) {
        l.admitted = true;
        l.deviceHits = deviceHitTokens;
        l.hostHits = hostHitTokens;
        l.l3Hits = l3HitTokens;
        l.usable = usableTokens;
        l.admittedNanos = System.nanoTime();
        l.leaveWaiting();
        l.touch();
      }
    }

    @Override
    public void prefilled(long tick, long requestId) {
      Live l = live.get(requestId);
      if (l != null) {
        l.prefilledNanos = System.nanoTime();
      }
    }

    @Override
    public void awaited(
        long tick, long requestId, int pagesExpected, int pagesFetched, int pagesRecomputed) {
      Live l = live.get(requestId);
      if (l != null) {
        l.pagesExpected = pagesExpected;
        l.pagesFetched = pagesFetched;
        l.pagesRecomputed = pagesRecomputed;
      }
    }

    @Override
    public void published(long tick, long requestId, int pagesPublished) {
      Live l = live.get(requestId);
      if (l != null) {
        l.pagesPublished = pagesPublished;
        l.publishedNanos = System.nanoTime();
      }
    }

    @Override
    public void requeued(long tick, long requestId, int lostTokens) {
      Live l = live.get(requestId);
      if (l != null) {
        l.reenterWaiting();
      }
    }

    @Override
    public void rejected(long tick, long requestId, String reason) {
      Live l = live.get(requestId);
      if (l != null) {
        l.rejection = reason;
      }
    }

    @Override
    public void ended(long tick, long requestId, RequestOutcome outcome) {
      Live l = live.get(requestId);
      if (l != null) {
        l.outcome = outcome;
        l.leaveWaiting();
        l.touch();
      }
    }
  }
}
