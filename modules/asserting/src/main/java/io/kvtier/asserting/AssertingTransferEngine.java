package io.kvtier.asserting;

import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A transfer engine that asserts correct use of a delegate engine: a copy must not read a freed
 * page or a page whose own incoming copy is not done, must not write a freed page or a page that
 * another copy in flight reads; and the delegate must complete each direction in FIFO order.
 * Misuse throws {@link AssertionError}; the delegate's own exceptions pass through unchanged.
 */
public final class AssertingTransferEngine implements TransferEngine {

  private final TransferEngine delegate;
  private final PageOwnership device;
  private final PageOwnership host;
  private final List<EngineCount> pools;
  private final Map<TransferDirection, ArrayDeque<TransferHandle>> unconfirmed =
      new EnumMap<>(TransferDirection.class);
  private boolean closed;

  /**
   * Wraps an engine.
   *
   * @param delegate the engine to check
   * @param device the tracker of the device pool
   * @param host the tracker of the host pool
   */
  public AssertingTransferEngine(
      TransferEngine delegate, PageOwnership device, PageOwnership host) {
    this(delegate, device, host, List.of());
  }

  AssertingTransferEngine(
      TransferEngine delegate, PageOwnership device, PageOwnership host, List<EngineCount> pools) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.device = Objects.requireNonNull(device, "device");
    this.host = Objects.requireNonNull(host, "host");
    this.pools = List.copyOf(pools);
    for (TransferDirection d : TransferDirection.values()) {
      unconfirmed.put(d, new ArrayDeque<>());
    }
    this.pools.forEach(EngineCount::opened);
  }

  /**
   * The wrapped engine, for example a {@link FaultyTransferEngine} to control.
   *
   * @return the delegate
   */
  public TransferEngine delegate() {
    return delegate;
  }

  @Override
  public synchronized TransferHandle submit(TransferBatch batch) {
    Objects.requireNonNull(batch, "batch");
    OptionalInt layer = batch.layer();
    boolean toHost = batch.direction() == TransferDirection.DEVICE_TO_HOST;
    PageOwnership source = toHost ? device : host;
    PageOwnership destination = toHost ? host : device;
    String name = toHost ? "D2H copy" : "H2D copy";
    for (int i = 0; i < batch.size(); i++) {
      int src = toHost ? batch.devicePage(i) : batch.hostPage(i);
      int dst = toHost ? batch.hostPage(i) : batch.devicePage(i);
      source.checkRead(src, layer, name + " from");
      destination.checkWrite(dst, layer, name);
    }
    TransferHandle raw = delegate.submit(batch);
    String what = batch.direction() + " copy seq " + raw.sequence();
    for (int i = 0; i < batch.size(); i++) {
      int src = toHost ? batch.devicePage(i) : batch.hostPage(i);
      int dst = toHost ? batch.hostPage(i) : batch.devicePage(i);
      source.addReader(src, layer, raw, what);
      destination.addIncoming(dst, layer, raw, what);
    }
    unconfirmed.get(batch.direction()).addLast(raw);
    return new Handle(raw);
  }

  /** Checks that every handle of the direction submitted before {@code done} is done too. */
  private synchronized void confirmDone(TransferHandle done) {
    ArrayDeque<TransferHandle> queue = unconfirmed.get(done.batch().direction());
    while (!queue.isEmpty() && queue.peekFirst().sequence() <= done.sequence()) {
      TransferHandle earlier = queue.peekFirst();
      if (!earlier.isDone()) {
        throw new AssertionError(
            done.batch().direction()
                + " copy seq "
                + done.sequence()
                + " is done but the earlier seq "
                + earlier.sequence()
                + " is not: the engine"
                + " violates FIFO completion per direction");
      }
      queue.pollFirst();
    }
  }

  @Override
  public int inFlight() {
    return delegate.inFlight();
  }

  @Override
  public void close() {
    delegate.close();
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    pools.forEach(EngineCount::closed);
  }

  /** The delegate's handle, checking FIFO order whenever it reports done. */
  private final class Handle implements TransferHandle {
    private final TransferHandle raw;

    Handle(TransferHandle raw) {
      this.raw = raw;
    }

    @Override
    public long sequence() {
      return raw.sequence();
    }

    @Override
    public TransferBatch batch() {
      return raw.batch();
    }

    @Override
    public boolean isDone() {
      boolean done = raw.isDone();
      if (done) {
        confirmDone(raw);
      }
      return done;
    }

    @Override
    public Optional<Throwable> failure() {
      return raw.failure();
    }

    @Override
    public void await() throws InterruptedException {
      try {
        raw.await();
      } finally {
        if (raw.isDone()) {
          confirmDone(raw);
        }
      }
    }

    @Override
    public boolean await(Duration timeout) throws InterruptedException {
      try {
        return raw.await(timeout);
      } finally {
        if (raw.isDone()) {
          confirmDone(raw);
        }
      }
    }

    @Override
    public String toString() {
      return "Asserting" + raw;
    }
  }
}
