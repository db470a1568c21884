package io.kvtier.server;

import io.kvtier.core.rank.Sampling;
import io.kvtier.serving.Completion;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.GenerationEngine.Generation;
import io.kvtier.serving.GenerationEngine.GenerationRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The generations of one API call, one per prompt, as a queue of events that the exchange's
 * thread reads. The engine's thread only appends to the queue: a slow client never holds the
 * engine, whose one thread advances every running request.
 */
final class GenerationCall {

  /** Something that happened to one prompt's generation, with when (System.nanoTime). */
  sealed interface Event {
    int index();

    long nanos();
  }

  record Admitted(int index, long nanos) implements Event {}

  record Token(int index, long nanos, int token) implements Event {}

  record Finished(int index, long nanos, Completion completion) implements Event {}

  record Failed(int index, long nanos, Throwable cause) implements Event {}

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
  private final List<Generation> generations = new ArrayList<>();

  private GenerationCall() {}

  /**
   * Submits every prompt with its part in a prompt KV transfer; if one is refused, cancels those
   * already submitted.
   *
   * @param engine the engine
   * @param prompts the prompts
   * @param maxTokens tokens per prompt
   * @param namespace the prompts' cache namespace
   * @param transfer each prompt's part
   * @param sampling how tokens are chosen; prompt {@code i} draws with seed {@code seed + i}, so
   *     two equal prompts of one request sample apart
   * @param listener told of admissions and ends
   * @return the call
   */
  static GenerationCall submit(
      GenerationEngine engine,
      List<int[]> prompts,
      int maxTokens,
      long namespace,
      KvTransfer transfer,
      Sampling sampling,
      Listener listener) {
    GenerationCall call = new GenerationCall();
    try {
      for (int i = 0; i < prompts.size(); i++) {
        listener.submitted();
        Sampling choice =
            sampling.greedy()
                ? sampling
                : new Sampling(
                    sampling.temperature(), sampling.topP(), sampling.topK(), sampling.seed() + i);
        try {
          call.generations.add(
              engine.submit(
                  new GenerationRequest(
                      prompts.get(i),
                      maxTokens,
                      namespace,
                      transfer.role(i),
                      transfer.pages(i),
                      choice),
                  call.stream(i, listener)));
        } catch (RuntimeException e) {
          listener.refused();
          throw e;
        }
      }
    } catch (RuntimeException e) {
      call.cancelAll();
      throw e;
    }
    return call;
  }

  private GenerationEngine.TokenStream stream(int index, Listener listener) {
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
        events.add(new Token(index, System.nanoTime(), token));
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
   * Ends one prompt's generation early (a stop sequence matched).
   *
   * @param index the prompt
   */
  void cancel(int index) {
    generations.get(index).cancel();
  }

  /** Ends every generation (the client went away, or one of them failed). */
  void cancelAll() {
    for (Generation g : generations) {
      g.cancel();
    }
  }

  int size() {
    return generations.size();
  }
}
