package io.kvtier.backend.cpu;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

/**
 * A host pool of "another provider" over a {@code cpu} host pool, so that the engine reaches it
 * through {@link #block}: a copy that touches a gated page waits in {@code block} until {@link
 * #open()}, a copy that touches a broken page throws there, and every thread that copies is
 * remembered. Hand-written fake for {@link CpuTransferEngineTest}.
 */
final class GatedHostMemory implements HostMemory {

  private final HostMemory delegate;
  private final Set<Integer> gatedPages;
  private final Set<Integer> brokenPages;
  private final CountDownLatch gate = new CountDownLatch(1);
  private final CountDownLatch reached = new CountDownLatch(1);
  private final Set<Thread> copiers = ConcurrentHashMap.newKeySet();

  GatedHostMemory(HostMemory delegate, Set<Integer> gatedPages, Set<Integer> brokenPages) {
    this.delegate = delegate;
    this.gatedPages = Set.copyOf(gatedPages);
    this.brokenPages = Set.copyOf(brokenPages);
  }

  /** Lets the copies waiting at gated pages go on, and every later one pass. */
  void open() {
    gate.countDown();
  }

  /** Waits until a copy has reached a gated page (and is held there until {@link #open()}). */
  void awaitCopyAtGate() throws InterruptedException {
    reached.await();
  }

  /** The threads that copied to or from this pool. */
  Set<Thread> copiers() {
    return Set.copyOf(copiers);
  }

  @Override
  public MemorySegment block(int page, int layer) {
    copiers.add(Thread.currentThread());
    if (brokenPages.contains(page)) {
      throw new IllegalStateException("host page " + page + " is broken (GatedHostMemory)");
    }
    if (gatedPages.contains(page)) {
      reached.countDown();
      boolean interrupted = false;
      while (true) {
        try {
          gate.await();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    return delegate.block(page, layer);
  }

  @Override
  public boolean pinned() {
    return delegate.pinned();
  }

  @Override
  public PoolSpec spec() {
    return delegate.spec();
  }

  @Override
  public void write(int page, int layer, long offset, MemorySegment src) {
    delegate.write(page, layer, offset, src);
  }

  @Override
  public void read(int page, int layer, long offset, MemorySegment dst) {
    delegate.read(page, layer, offset, dst);
  }

  @Override
  public void close() {
    delegate.close();
  }
}
