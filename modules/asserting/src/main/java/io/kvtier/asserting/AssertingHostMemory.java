package io.kvtier.asserting;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A host pool that asserts correct use of a delegate pool: no use of a freed page, no read of a
 * page whose incoming copy is not done, no overwrite of a page that a copy in flight reads, no
 * close while copies are in flight or an engine is open. Misuse throws {@link AssertionError};
 * everything else, including the delegate's own exceptions, passes through unchanged.
 */
public final class AssertingHostMemory implements HostMemory {

  private static final List<AssertingHostMemory> OPEN = new CopyOnWriteArrayList<>();

  private final HostMemory delegate;
  private final PageOwnership ownership;
  private final EngineCount engines = new EngineCount();
  private volatile boolean closed;

  /**
   * Wraps a host pool.
   *
   * @param delegate the pool to check
   */
  public AssertingHostMemory(HostMemory delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.ownership = new PageOwnership("host", delegate.spec().pages());
    OPEN.add(this);
  }

  /**
   * The asserting host pools opened and not yet closed in this JVM, oldest first: how a test
   * reaches a pool that an engine opened through the {@code asserting} provider.
   *
   * @return a snapshot
   */
  public static List<AssertingHostMemory> openPools() {
    return List.copyOf(OPEN);
  }

  /**
   * The page ownership tracker of this pool.
   *
   * @return the tracker, to mark pages allocated and freed
   */
  public PageOwnership ownership() {
    return ownership;
  }

  /**
   * The wrapped pool.
   *
   * @return the delegate
   */
  public HostMemory delegate() {
    return delegate;
  }

  EngineCount engines() {
    return engines;
  }

  @Override
  public PoolSpec spec() {
    return delegate.spec();
  }

  /**
   * {@inheritDoc}
   *
   * <p>Whether the caller will read or write the segment is unknown, so this asserts what both
   * need: the page is not freed and no incoming copy into it is in flight.
   */
  @Override
  public MemorySegment block(int page, int layer) {
    ownership.checkRead(page, OptionalInt.of(layer), "block()");
    return delegate.block(page, layer);
  }

  @Override
  public boolean pinned() {
    return delegate.pinned();
  }

  @Override
  public boolean holdsBytes() {
    return delegate.holdsBytes();
  }

  @Override
  public void write(int page, int layer, long offset, MemorySegment src) {
    ownership.checkWrite(page, OptionalInt.of(layer), "write()");
    ownership.checkRead(page, OptionalInt.of(layer), "write()");
    delegate.write(page, layer, offset, src);
  }

  @Override
  public void read(int page, int layer, long offset, MemorySegment dst) {
    ownership.checkRead(page, OptionalInt.of(layer), "read()");
    delegate.read(page, layer, offset, dst);
  }

  /**
   * {@inheritDoc}
   *
   * @throws AssertionError if a transfer engine on this pool is open or a copy is in flight
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    engines.checkNoneOpen("closing the host pool");
    ownership.checkNoCopyInFlight("closing the host pool");
    closed = true;
    OPEN.remove(this);
    delegate.close();
  }
}
