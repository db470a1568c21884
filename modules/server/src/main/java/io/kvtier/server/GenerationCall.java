package io.kvtier.server;

import io.kvtier.core.rank.Sampling;
import io.kvtier.core.rank.TokenLogprob;
import io.kvtier.serving.Completion;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.GenerationEngine.Generation;
import io.kvtier.serving.GenerationEngine.GenerationRequest;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The generations of one API call, one per choice, as a queue of events that the exchange's
 * thread reads. The engine's thread only appends to the queue: a slow client never holds the
 * engine, whose one thread advances every running request.
 *
 * <p>With {@code n > 1} choices per prompt on an engine that {@link
 * GenerationEngine#cachesPrefixes() caches prefixes}, each prompt is computed once: a one-token
 * greedy generation of the prompt runs first (the prompt's primer), which leaves the prompt's
 * pages in the cache when it ends ({@link Primed}); the exchange's thread then starts the
 * prompt's choices ({@link #startChoices}), which match those pages and compute only the tail
 * shorter than a page. Without, the choices all start at once and each computes the prompt.
 */
final class GenerationCall {

  /** Something that happened to one choice's generation, with when (System.nanoTime). */
  sealed interface Event {
    int index();

    long nanos();
  }

  record Admitted(int index, long nanos) implements Event {}

  /** A generated token, with its log-probabilities where the request asked (else null). */
  record Token(int index, long nanos, int token, TokenLogprob logprob) implements Event {}

  /** The prompt's log-probabilities, where the request asked (echo with logprobs). */
  record PromptLogprobs(int index, long nanos, List<TokenLogprob> logprobs) implements Event {}

  record Finished(int index, long nanos, Completion completion) implements Event {}

  /** A choice's generation failed, or its prompt's primer's ({@code index}: its first choice). */
  record Failed(int index, long nanos, Throwable cause) implements Event {}

  /**
   * The primer of prompt {@code prompt} ended and cached it: its choices may start.
   *
   * @param index the prompt's first choice
   * @param completion the primer's, whose cached tokens are what the cache held of the prompt
   *     when the call came
   */
  record Primed(int index, long nanos, int prompt, Completion completion) implements Event {}

  /**
   * Told of each generation's steps: submitted and refused on the exchange's thread, admitted and
   * ended on the engine's.
   */
  interface Listener {
    void submitted();

    void refused();

    void admitted();

    void ended(boolean wasAdmitted);
  }

  private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
  private final GenerationEngine engine;
  private final List<int[]> prompts;
  private final int n;
  private final int maxTokens;
  private final long namespace;
  private final KvTransfer transfer;
  private final Sampling sampling;
  private final Listener listener;
  private final Generation[] generations;
  private final Generation[] primers;

  private GenerationCall(
      GenerationEngine engine,
      List<int[]> prompts,
      int n,
      int maxTokens,
      long namespace,
      KvTransfer transfer,
      Sampling sampling,
      Listener listener) {
    this.engine = engine;
    this.prompts = prompts;
    this.n = n;
    this.maxTokens = maxTokens;
    this.namespace = namespace;
    this.transfer = transfer;
    this.sampling = sampling;
    this.listener = listener;
    this.generations = new Generation[prompts.size() * n];
    this.primers = new Generation[prompts.size()];
  }

  /**
   * Submits every prompt's choices, or with {@code n > 1} on an engine that caches prefixes each
   * prompt's primer, with its part in a prompt KV transfer; if one is refused, cancels those
   * already submitted.
   *
   * @param engine the engine
   * @param prompts the prompts
   * @param n choices per prompt: choice {@code i} is of prompt {@code i / n}
   * @param maxTokens tokens per choice
   * @param namespace the prompts' cache namespace
   * @param transfer each prompt's part (with {@code n} 1 only)
   * @param sampling how tokens are chosen; choice {@code i} draws with seed {@code seed + i}, so
   *     two choices of one prompt, or two equal prompts, sample apart
   * @param listener told of admissions and ends
   * @return the call
   */
  static GenerationCall submit(
      GenerationEngine engine,
      List<int[]> prompts,
      int n,
      int maxTokens,
      long namespace,
      KvTransfer transfer,
      Sampling sampling,
      Listener listener) {
    if (n > 1 && transfer.kind() != KvTransfer.Kind.NONE) {
      throw new IllegalArgumentException("a prompt KV transfer takes one choice per prompt");
    }
    GenerationCall call =
        new GenerationCall(engine, prompts, n, maxTokens, namespace, transfer, sampling, listener);
    // A choice that asks for its prompt's log-probabilities matches no cached prefix: no primer.
    boolean prime = n > 1 && engine.cachesPrefixes() && !sampling.promptLogprobs();
    try {
      for (int p = 0; p < prompts.size(); p++) {
        if (prime) {
          call.prime(p);
        } else {
          call.startChoices(p);
        }
      }
    } catch (RuntimeException e) {
      call.cancelAll();
      throw e;
    }
    return call;
  }

  /** Submits the one-token generation that caches prompt {@code p} for its choices. */
  private void prime(int p) {
    int first = p * n;
    listener.submitted();
    try {
      primers[p] =
          engine.submit(
              new GenerationRequest(prompts.get(p), 1, namespace),
              new GenerationEngine.TokenStream() {
                private boolean admitted;

                @Override
                public void admitted(int cachedTokens, int deviceHits, int hostHits, int l3Hits) {
                  admitted = true;
                  listener.admitted();
                }

                @Override
                public void token(int token) {}

                @Override
                public void finished(Completion completion) {
                  listener.ended(admitted);
                  events.add(new Primed(first, System.nanoTime(), p, completion));
                }

                @Override
                public void failed(Throwable cause) {
                  listener.ended(admitted);
                  events.add(new Failed(first, System.nanoTime(), cause));
                }
              });
    } catch (RuntimeException e) {
      listener.refused();
      throw e;
    }
  }

  /**
   * Submits the {@code n} choices of prompt {@code p}: at once, or when its primer's {@link
   * Primed} event came. A refusal leaves the choices submitted before it running: the caller
   * cancels the call.
   *
   * @param p the prompt
   * @throws RuntimeException as {@link GenerationEngine#submit} throws
   */
  void startChoices(int p) {
    primers[p] = null; // ended: nothing to cancel
    for (int i = p * n; i < (p + 1) * n; i++) {
      listener.submitted();
      Sampling choice = sampling.greedy() ? sampling : sampling.withSeed(sampling.seed() + i);
      try {
        generations[i] =
            engine.submit(
                new GenerationRequest(
                    prompts.get(p),
                    maxTokens,
                    namespace,
                    transfer.role(p),
                    transfer.pages(p),
                    choice),
                stream(i));
      } catch (RuntimeException e) {
        listener.refused();
        throw e;
      }
    }
  }

  private GenerationEngine.TokenStream stream(int index) {
    return new GenerationEngine.TokenStream() {
      private boolean admitted;

      @Override
      public void admitted(int cachedTokens, int deviceHits, int hostHits, int l3Hits) {
        admitted = true;
        listener.admitted();
        events.add(new Admitted(index, System.nanoTime()));
      }

      @Override
      public void token(int token) {
        token(token, null);
      }

      @Override
      public void token(int token, TokenLogprob logprob) {
        events.add(new Token(index, System.nanoTime(), token, logprob));
      }

      @Override
      public void promptLogprobs(List<TokenLogprob> logprobs) {
        events.add(new PromptLogprobs(index, System.nanoTime(), logprobs));
      }

      @Override
      public void finished(Completion completion) {
        listener.ended(admitted);
        events.add(new Finished(index, System.nanoTime(), completion));
      }

      @Override
      public void failed(Throwable cause) {
        listener.ended(admitted);
        events.add(new Failed(index, System.nanoTime(), cause));
      }
    };
  }

  /**
   * Waits for the next event.
   *
   * @param deadlineNanos the System.nanoTime by which the call must have ended
   * @return the event
   * @throws TimeoutException if the deadline passed first
   * @throws InterruptedException if the exchange's thread is interrupted
   */
  Event next(long deadlineNanos) throws TimeoutException, InterruptedException {
    Event e = events.poll(deadlineNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
    if (e == null) {
      throw new TimeoutException();
    }
    return e;
  }

  /**
   * Ends one choice's generation early (a stop sequence matched).
   *
   * @param index the choice
   */
  void cancel(int index) {
    generations[index].cancel();
  }

  /** Ends every generation (the client went away, or one of them failed). */
  void cancelAll() {
    for (Generation g : primers) {
      if (g != null) {
        g.cancel();
      }
    }
    for (Generation g : generations) {
      if (g != null) {
        g.cancel();
      }
    }
  }

  /**
   * The choices of the call, started or not.
   *
   * @return prompts times {@code n}
   */
  int size() {
    return generations.length;
  }
}
