package io.kvtier.server;

import io.kvtier.model.tiny.TinyText;
import io.kvtier.serving.Completion;
import io.kvtier.serving.EngineStats;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.ModelText;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A scripted {@link GenerationEngine} for the HTTP layer's tests: on its own thread, like a real
 * engine, it admits each generation (reporting half the prompt as device hits), then emits the
 * script's tokens one by one, up to the budget, and finishes. A test can make it refuse (busy),
 * fail, or hold before each token (a permit per token).
 */
final class FakeEngine implements GenerationEngine {
  private final ExecutorService thread = Executors.newSingleThreadExecutor();
  final AtomicReference<int[]> script =
      new AtomicReference<>(TinyText.INSTANCE.encode("Hello, world!"));
  final AtomicBoolean busy = new AtomicBoolean();
  final AtomicReference<RuntimeException> failure = new AtomicReference<>();
  final AtomicInteger cancelled = new AtomicInteger();
  final AtomicInteger submitted = new AtomicInteger();

  /** The namespace of each request submitted, in order. */
  final java.util.concurrent.ConcurrentLinkedQueue<Long> namespaces =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  /** The sampling of each request submitted, in order. */
  final java.util.concurrent.ConcurrentLinkedQueue<io.kvtier.core.rank.Sampling> samplings =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  /** What happened, in order: "submit N" and "finish N" for a generation of N tokens. */
  final java.util.concurrent.ConcurrentLinkedQueue<String> log =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  /** Whether it says it caches prefixes ({@link #cachesPrefixes}). */
  volatile boolean cachesPrefixes;

  /** Submissions it takes before it answers busy, like a queue that filled. */
  volatile int accepts = Integer.MAX_VALUE;

  /** Empty: free running; else one permit per token. */
  volatile Semaphore tokens;

  /** The vocabulary: the tiny model's, unless a test serves another model's text. */
  volatile int vocabulary = 512;

  @Override
  public int vocabularySize() {
    return vocabulary;
  }

  @Override
  public int contextLimit() {
    return 256;
  }

  /** The model's text: the tiny model's, which the script is written in, unless a test says. */
  volatile ModelText text = TinyText.INSTANCE;

  @Override
  public ModelText text() {
    return text;
  }

  @Override
  public boolean cachesPrefixes() {
    return cachesPrefixes;
  }

  @Override
  public Generation submit(GenerationRequest request, TokenStream stream) {
    if (busy.get() || submitted.get() >= accepts) {
      throw new EngineBusyException("the request queue is full (2 requests waiting)");
    }
    submitted.incrementAndGet();
    log.add("submit " + request.maxTokens());
    namespaces.add(request.namespace());
    samplings.add(request.sampling());
    AtomicBoolean cancel = new AtomicBoolean();
    int[] prompt = request.prompt();
    thread.execute(
        () -> {
          RuntimeException fail = failure.get();
          if (fail != null) {
            stream.failed(fail);
            return;
          }
          int cached = request.sampling().promptLogprobs() ? 0 : prompt.length / 2;
          stream.admitted(cached, cached, 0, 0);
          if (request.sampling().promptLogprobs()) {
            // Prompt token i + 1 at -0.1 (i + 1), with the same made-up top list as a token's.
            List<io.kvtier.core.rank.TokenLogprob> entries = new ArrayList<>();
            for (int i = 1; i < prompt.length; i++) {
              io.kvtier.core.rank.TokenLogprob lp =
                  logprob(request.sampling().logprobs(), prompt[i], i - 1);
              entries.add(
                  new io.kvtier.core.rank.TokenLogprob(
                      lp.token(), -0.1f * i, lp.topTokens(), lp.topLogprobs()));
            }
            stream.promptLogprobs(entries);
          }
          int[] out = script.get();
          int n = 0;
          while (n < request.maxTokens() && !cancel.get()) {
            Semaphore gate = tokens;
            if (gate != null) {
              gate.acquireUninterruptibly();
            }
            int token = out[n % out.length];
            stream.token(token, logprob(request.sampling().logprobs(), token, n));
            n++;
          }
          int[] made = new int[n];
          for (int i = 0; i < n; i++) {
            made[i] = out[i % out.length];
          }
          log.add("finish " + request.maxTokens());
          stream.finished(new Completion(made, cached, cached, 0));
        });
    return () -> {
      if (cancel.compareAndSet(false, true)) {
        cancelled.incrementAndGet();
      }
    };
  }

  /**
   * A made-up log-probability where the request asked: the token at -0.25 (n + 1), then the top
   * list: the token, byte 0xC3 (half a character), marker 300, then ids 301 on, each 0.5 lower.
   */
  static io.kvtier.core.rank.TokenLogprob logprob(int top, int token, int n) {
    if (top < 0) {
      return null;
    }
    float logprob = -0.25f * (n + 1);
    int[] ids = new int[top];
    float[] lps = new float[top];
    for (int i = 0; i < top; i++) {
      ids[i] = i == 0 ? token : i == 1 ? 0xC3 : 298 + i;
      lps[i] = logprob - 0.5f * i;
    }
    return new io.kvtier.core.rank.TokenLogprob(token, logprob, ids, lps);
  }

  /** The script's text for {@code n} tokens. */
  String text(int n) {
    int[] out = script.get();
    int[] made = new int[n];
    for (int i = 0; i < n; i++) {
      made[i] = out[i % out.length];
    }
    StringBuilder s = new StringBuilder();
    ModelText.Decoder d = TinyText.INSTANCE.decoder(new int[0], false);
    Arrays.stream(made).forEach(t -> s.append(d.add(t)));
    return s.append(d.finish()).toString();
  }

  @Override
  public EngineStats stats() {
    throw new UnsupportedOperationException("the fake engine keeps no stats");
  }

  @Override
  public void close() {
    thread.shutdownNow();
  }
}
