package io.kvtier.asserting;

import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferEngine;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;

/**
 * A device pool that asserts correct use of a delegate pool and of the transfer engines it
 * creates: no use of a freed page, no read of a page whose incoming copy is not done, no
 * overwrite or free of a page that a copy in flight reads, FIFO completion, and pools outliving
 * their engines and copies. Misuse throws {@link AssertionError}; the delegate's own exceptions
 * pass through unchanged.
 */
public final class AssertingDeviceMemory implements DeviceMemory {

  private static final List<AssertingDeviceMemory> OPEN = new CopyOnWriteArrayList<>();

  private final DeviceMemory delegate;
  private final PageOwnership ownership;
  private final EngineCount engines = new EngineCount();
  private final UnaryOperator<TransferEngine> engineWrapper;
  private volatile boolean closed;

  /**
   * Wraps a device pool.
   *
   * @param delegate the pool to check
   */
  public AssertingDeviceMemory(DeviceMemory delegate) {
    this(delegate, UnaryOperator.identity());
  }

  /**
   * Wraps a device pool whose engines are wrapped once more before the assertions, for example in
   * a {@link FaultyTransferEngine}.
   *
   * @param delegate the pool to check
   * @param engineWrapper applied to each engine the delegate creates
   */
  public AssertingDeviceMemory(DeviceMemory delegate, UnaryOperator<TransferEngine> engineWrapper) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.engineWrapper = Objects.requireNonNull(engineWrapper, "engineWrapper");
    this.ownership = new PageOwnership("device", delegate.spec().pages());
    OPEN.add(this);
  }

  /**
   * The asserting device pools opened and not yet closed in this JVM, oldest first: how a test
   * reaches a pool that an engine opened through the {@code asserting} provider.
   *
   * @return a snapshot
   */
  public static List<AssertingDeviceMemory> openPools() {
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
  public DeviceMemory delegate() {
    return delegate;
  }

  @Override
  public PoolSpec spec() {
    return delegate.spec();
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
   * <p>An {@link AssertingHostMemory} is unwrapped for the delegate, and its tracker checks the
   * host side of every copy; any other host pool is checked with a tracker of the engine's own.
   */
  @Override
  public TransferEngine transferEngine(HostMemory host) {
    Objects.requireNonNull(host, "host");
    PageOwnership hostOwnership;
    HostMemory rawHost;
    EngineCount hostEngines;
    if (host instanceof AssertingHostMemory asserting) {
      rawHost = asserting.delegate();
      hostOwnership = asserting.ownership();
      hostEngines = asserting.engines();
    } else {
      rawHost = host;
      hostOwnership = new PageOwnership("host", host.spec().pages());
      hostEngines = new EngineCount();
    }
    TransferEngine engine = engineWrapper.apply(delegate.transferEngine(rawHost));
    return new AssertingTransferEngine(
        engine, ownership, hostOwnership, List.of(engines, hostEngines));
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
    engines.checkNoneOpen("closing the device pool");
    ownership.checkNoCopyInFlight("closing the device pool");
    closed = true;
    OPEN.remove(this);
    delegate.close();
  }
}
