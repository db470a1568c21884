package io.kvtier.events;

import io.kvtier.core.cache.CacheEvent;
import io.kvtier.core.cache.CacheEventListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.DoubleSupplier;

/**
 * The cache's {@link CacheEventListener} that publishes: collects events into batches on the
 * scheduler thread and hands them to a publisher thread through a bounded buffer, which encodes
 * them and sends them to a {@link KvEventSink}.
 *
 * <p>Backpressure: the scheduler thread never waits. A batch is sealed (numbered) when it reaches
 * {@code maxBatchEvents} or, by the publisher thread, every {@code flushInterval}; if the buffer
 * is full then, the batch is dropped and counted ({@link KvEventStats}), and its sequence number
 * stays unused: a subscriber sees the gap, and since no replay can fill it, must forget what it
 * knew of this replica (docs/EVENTS.md). The first batch begins with {@code AllBlocksCleared}.
 */
public final class KvEventStream implements CacheEventListener, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(KvEventStream.class.getName());
  private static final long POLL_SLICE_NANOS = 50_000_000L;

  private final KvEventSink sink;
  private final KvEventCodec codec;
  private final int maxBatchEvents;
  private final long flushNanos;
  private final DoubleSupplier clock;
  private final ArrayBlockingQueue<KvEventBatch> buffer;
  private final Thread thread;
  private final CompletableFuture<Void> opened = new CompletableFuture<>();

  // Guarded by this: the open batch and the counters the scheduler thread moves.
  private List<CacheEvent> pending = new ArrayList<>();
  private boolean clearedPending = true;
  private long nextSequence;
  private long droppedBatches;
  private long droppedEvents;
  private boolean closed;

  // Written by the publisher thread only.
  private volatile long published;
  private volatile long failedSends;

  /**
   * A stream over {@code sink}; starts its publisher thread and waits until it has opened the sink.
   *
   * @param sink where encoded batches go
   * @param codec the wire encoding
   * @param bufferSize sealed batches the buffer holds, at least 1
   * @param maxBatchEvents events after which a batch is sealed at once, at least 1
   * @param flushInterval how often the publisher thread seals what has come
   * @throws IllegalArgumentException if the sink cannot open (an address in use, for example), with
   *     the sink's own message
   */
  public KvEventStream(
      KvEventSink sink,
      KvEventCodec codec,
      int bufferSize,
      int maxBatchEvents,
      Duration flushInterval) {
    this(sink, codec, bufferSize, maxBatchEvents, flushInterval, KvEventStream::now);
  }

  KvEventStream(
      KvEventSink sink,
      KvEventCodec codec,
      int bufferSize,
      int maxBatchEvents,
      Duration flushInterval,
      DoubleSupplier clock) {
    this.sink = Objects.requireNonNull(sink, "sink");
    this.codec = Objects.requireNonNull(codec, "codec");
    if (bufferSize < 1 || maxBatchEvents < 1) {
      throw new IllegalArgumentException(
          "bufferSize=" + bufferSize + " maxBatchEvents=" + maxBatchEvents + ": both must be >= 1");
    }
    this.maxBatchEvents = maxBatchEvents;
    this.flushNanos = Objects.requireNonNull(flushInterval, "flushInterval").toNanos();
    this.clock = clock;
    this.buffer = new ArrayBlockingQueue<>(bufferSize);
    this.thread = Thread.ofPlatform().daemon().name("kvtier-events").unstarted(this::run);
    thread.start();
    awaitOpen();
  }

  private void awaitOpen() {
    try {
      opened.get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException("the KV event sink failed to open", e.getCause());
    } catch (TimeoutException e) {
      thread.interrupt();
      throw new IllegalStateException("the KV event sink did not open within 30 s", e);
    } catch (InterruptedException e) {
      thread.interrupt();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the KV event sink opened", e);
    }
  }

  private static double now() {
    return System.currentTimeMillis() / 1000.0;
  }

  /** Adds the event to the open batch; seals it if full. Never blocks on the publisher. */
  @Override
  public void onEvent(CacheEvent event) {
    Objects.requireNonNull(event, "event");
    synchronized (this) {
      if (closed) {
        return;
      }
      pending.add(event);
      if (pending.size() >= maxBatchEvents) {
        seal();
      }
    }
  }

  /** Seals the open batch now, if it has events (the end of a scheduler tick, for example). */
  public synchronized void flush() {
    if (!closed && (!pending.isEmpty() || clearedPending)) {
      seal();
    }
  }

  // Holding this.
  private void seal() {
    KvEventBatch batch =
        new KvEventBatch(nextSequence++, clock.getAsDouble(), clearedPending, pending);
    clearedPending = false;
    pending = new ArrayList<>();
    if (!buffer.offer(batch)) {
      droppedBatches++;
      droppedEvents += batch.size();
    }
  }

  /** The counters. */
  public synchronized KvEventStats stats() {
    return new KvEventStats(nextSequence, published, droppedBatches, droppedEvents, failedSends);
  }

  private void run() {
    // The sink's sockets are created, used and closed on this thread only.
    try {
      sink.open();
    } catch (RuntimeException | Error e) {
      opened.completeExceptionally(e);
      return;
    }
    opened.complete(null);
    try {
      publish();
    } finally {
      try {
        sink.close();
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "KV event sink close failed", e);
      }
    }
  }

  private void publish() {
    // Polls in slices, so that close is seen soon even with a long flush interval.
    long slice = Math.min(flushNanos, POLL_SLICE_NANOS);
    long nextFlush = System.nanoTime() + flushNanos;
    while (true) {
      KvEventBatch batch;
      try {
        batch = buffer.poll(slice, TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        break;
      }
      if (batch != null) {
        send(batch);
      } else {
        synchronized (this) {
          if (closed) {
            break;
          }
          if (System.nanoTime() - nextFlush >= 0) {
            nextFlush = System.nanoTime() + flushNanos;
            if (!pending.isEmpty() || clearedPending) {
              seal();
            }
          }
        }
      }
      serviceSink();
    }
    // Closed: what was sealed before close still goes out.
    for (KvEventBatch b; (b = buffer.poll()) != null; ) {
      send(b);
    }
  }

  private void send(KvEventBatch batch) {
    try {
      sink.send(batch.sequence(), codec.encode(batch));
      published++;
    } catch (RuntimeException e) {
      failedSends++;
      LOG.log(System.Logger.Level.WARNING, "KV event batch " + batch.sequence() + " not sent", e);
    }
  }

  private void serviceSink() {
    try {
      sink.service();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "KV event sink service failed", e);
    }
  }

  /**
   * Seals the open batch, sends what was sealed, stops the thread, which closes the sink.
   *
   * @throws IllegalStateException if the publisher thread does not stop within 5 seconds; it is
   *     interrupted and closes the sink when the stuck send returns
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      if (!pending.isEmpty()) {
        seal();
      }
      closed = true;
    }
    try {
      thread.join(Duration.ofSeconds(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) {
      thread.interrupt();
      throw new IllegalStateException(
          "the KV event publisher thread did not stop within 5 s (a sink send is stuck); it is"
              + " interrupted and closes its sink when that send returns");
    }
  }
}
