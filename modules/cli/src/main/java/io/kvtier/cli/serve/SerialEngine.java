package io.kvtier.cli.serve;

import io.kvtier.cli.model.Completion;
import io.kvtier.cli.model.EngineStats;
import io.kvtier.cli.model.GenerationEngine;
import io.kvtier.cli.model.ModelEngine;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@link GenerationEngine} over today's one-request-at-a-time {@link ModelEngine}: one thread
 * runs the queued generations in turn, each to its end, then hands its tokens to the stream. It
 * keeps {@code kvtier serve} working until the rank engine's continuous batching serves it; it
 * streams nothing until a generation ends, and a cancel only drops a generation not yet started.
 * When idle, the thread ticks the engine so that finished backups become visible.
 */
public final class SerialEngine implements GenerationEngine {
  private static final System.Logger LOG = System.getLogger(SerialEngine.class.getName());
  private static final long IDLE_SYNC_MILLIS = 50;

  private record Job(GenerationRequest request, TokenStream stream, boolean[] cancelled) {}

  private final ModelEngine engine;
  private final ArrayBlockingQueue<Job> queue;
  private final Thread thread;
  private volatile boolean stopping;

  /**
   * Starts the engine's thread.
   *
   * @param engine the engine; closed by {@link #close()}
   * @param queueCapacity generations that may wait before {@link EngineBusyException}
   */
  public SerialEngine(ModelEngine engine, int queueCapacity) {
    if (queueCapacity < 1) {
      throw new IllegalArgumentException("queueCapacity=" + queueCapacity + " must be >= 1");
    }
    this.engine = Objects.requireNonNull(engine, "engine");
    this.queue = new ArrayBlockingQueue<>(queueCapacity);
    this.thread = Thread.ofPlatform().name("kvtier-engine").unstarted(this::run);
    thread.start();
  }

  @Override
  public int vocabularySize() {
    return engine.model().config().vocabSize();
  }

  @Override
  public int contextLimit() {
    return engine.contextLimit();
  }

  @Override
  public Generation submit(GenerationRequest request, TokenStream stream) {
    Job job =
        new Job(
            Objects.requireNonNull(request, "request"),
            Objects.requireNonNull(stream, "stream"),
            new boolean[1]);
    // Checked and offered under the lock that close() takes, so that no job slips in after the
    // thread's last look at the queue and waits forever.
    synchronized (this) {
      if (stopping) {
        throw new IllegalStateException("the engine is closed");
      }
      if (!queue.offer(job)) {
        throw new EngineBusyException(
            "the request queue is full (" + queue.size() + " requests waiting)");
      }
    }
    return () -> {
      synchronized (job.cancelled()) {
        job.cancelled()[0] = true;
      }
    };
  }

  @Override
  public EngineStats stats() {
    return engine.stats();
  }

  private void run() {
    try {
      while (true) {
        Job job = queue.poll(IDLE_SYNC_MILLIS, TimeUnit.MILLISECONDS);
        if (job == null) {
          if (stopping) {
            break;
          }
          syncQuietly();
          continue;
        }
        synchronized (job.cancelled()) {
          if (job.cancelled()[0]) {
            job.stream().finished(new Completion(new int[0], 0, 0, 0));
            continue;
          }
        }
        Completion c;
        try {
          GenerationRequest r = job.request();
          c = engine.generate(r.prompt(), r.maxTokens());
        } catch (InterruptedException e) {
          job.stream().failed(e);
          throw e;
        } catch (RuntimeException | Error e) {
          job.stream().failed(e);
          continue;
        }
        job.stream()
            .admitted(c.cachedTokens(), c.deviceHitTokens(), c.hostHitTokens(), c.l3HitTokens());
        for (int t : c.tokens()) {
          job.stream().token(t);
        }
        job.stream().finished(c);
      }
      engine.drain();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "the engine thread failed", e);
    } finally {
      Job left;
      while ((left = queue.poll()) != null) {
        left.stream().failed(new IllegalStateException("the engine is closed"));
      }
    }
  }

  private void syncQuietly() {
    try {
      engine.sync();
    } catch (RuntimeException e) {
      // A failed engine fails the next request too, which reports it to a client.
      LOG.log(System.Logger.Level.WARNING, "idle tick of the engine failed", e);
    }
  }

  /** Stops taking generations, runs the queued ones, waits for the copies, closes the engine. */
  @Override
  public void close() {
    synchronized (this) {
      stopping = true;
    }
    try {
      thread.join();
    } catch (InterruptedException e) {
      thread.interrupt();
      Thread.currentThread().interrupt();
    } finally {
      engine.close();
    }
  }
}
