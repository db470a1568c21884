package io.kvtier.cli.serve;

import io.kvtier.cli.model.Completion;
import io.kvtier.cli.model.ModelEngine;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The one thread that drives the {@link ModelEngine} (its rank engine is single-threaded), fed by a
 * bounded queue: a request that finds the queue full is refused at once with a 429 rather than
 * waiting without bound. When idle, the thread ticks the engine so that finished backups become
 * visible and the occupancy metrics stay current.
 *
 * <p>{@link #close()} stops taking requests (503), serves those already queued, then waits for the
 * engine's copies to finish.
 */
final class EngineWorker implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(EngineWorker.class.getName());
  private static final long IDLE_SYNC_MILLIS = 50;

  /** A request to serve, or (request null) a pause that holds the engine thread, for tests. */
  private record Job(
      CompletionRequest request, CompletableFuture<Completion> result, CountDownLatch pause) {}

  private final ModelEngine engine;
  private final ArrayBlockingQueue<Job> queue;
  private final Thread thread;
  private volatile boolean stopping;

  EngineWorker(ModelEngine engine, int queueCapacity) {
    if (queueCapacity < 1) {
      throw new IllegalArgumentException("queueCapacity=" + queueCapacity + " must be >= 1");
    }
    this.engine = engine;
    this.queue = new ArrayBlockingQueue<>(queueCapacity);
    this.thread = Thread.ofPlatform().name("kvtier-engine").daemon(false).unstarted(this::run);
    thread.start();
  }

  /**
   * Queues a request.
   *
   * @param request the validated request
   * @return its completion, later
   * @throws ApiException 429 if the queue is full, 503 if the server is shutting down
   */
  CompletableFuture<Completion> submit(CompletionRequest request) {
    return enqueue(
        new Job(Objects.requireNonNull(request, "request"), new CompletableFuture<>(), null));
  }

  /**
   * Holds the engine thread until {@code release} opens, as the next job: lets a test fill the
   * queue deterministically.
   *
   * @param release the latch the engine thread waits on
   * @return completed (with null) when the thread has resumed
   */
  CompletableFuture<Completion> pause(CountDownLatch release) {
    return enqueue(new Job(null, new CompletableFuture<>(), release));
  }

  private CompletableFuture<Completion> enqueue(Job job) {
    // Checked and offered under the lock that close() takes, so that no job slips in after the
    // worker's last look at the queue and waits forever.
    synchronized (this) {
      if (stopping) {
        throw new ApiException(
            503, "shutting_down", "the server is shutting down", OptionalInt.empty());
      }
      if (!queue.offer(job)) {
        throw new ApiException(
            429,
            "queue_full",
            "the request queue is full (" + queue.size() + " requests waiting): retry later",
            OptionalInt.of(1));
      }
    }
    return job.result();
  }

  /**
   * Requests waiting for the engine.
   *
   * @return the count
   */
  int queued() {
    return queue.size();
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
        if (job.result().isDone()) {
          continue; // the client gave up waiting
        }
        if (job.pause() != null) {
          job.pause().await();
          job.result().complete(null);
          continue;
        }
        try {
          CompletionRequest r = job.request();
          job.result().complete(engine.generate(r.promptTokens(), r.maxTokens()));
        } catch (InterruptedException e) {
          job.result().completeExceptionally(e);
          throw e;
        } catch (RuntimeException | Error e) {
          job.result().completeExceptionally(e);
        }
      }
      engine.drain();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "the engine thread failed", e);
    } finally {
      Job left;
      while ((left = queue.poll()) != null) {
        left.result()
            .completeExceptionally(
                new ApiException(
                    503, "shutting_down", "the server is shutting down", OptionalInt.empty()));
      }
    }
  }

  private void syncQuietly() {
    try {
      engine.sync();
    } catch (RuntimeException e) {
      // A failed engine fails the next request's tick too, which reports it to a client.
      LOG.log(System.Logger.Level.WARNING, "idle tick of the engine failed", e);
    }
  }

  /** Stops taking requests, serves the queued ones and waits for the engine's copies. */
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
    }
  }
}
