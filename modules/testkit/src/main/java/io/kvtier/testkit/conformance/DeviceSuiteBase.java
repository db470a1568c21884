package io.kvtier.testkit.conformance;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferEngine;
import io.kvtier.testkit.SeedExtension;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The hooks of {@link DeviceMemoryConformanceSuite}: what a provider module supplies. Split from
 * the checks only to keep each class readable; subclass {@link DeviceMemoryConformanceSuite}.
 */
@ExtendWith(SeedExtension.class)
@Timeout(120)
public abstract class DeviceSuiteBase {

  /** For subclasses. */
  protected DeviceSuiteBase() {}

  /**
   * The device provider under test.
   *
   * @return the provider; a new or a shared instance
   */
  protected abstract DeviceMemoryProvider deviceProvider();

  /**
   * The host provider whose pools the device copies to and from.
   *
   * @return the provider
   */
  protected abstract HostMemoryProvider hostProvider();

  /**
   * The context handed to both providers; called once per pair of pools, so a subclass with a
   * virtual clock returns a fresh clock each time and finds it again in {@link #control}.
   *
   * @return the context; {@link BackendContext#defaults()} unless overridden
   */
  protected BackendContext context() {
    return BackendContext.defaults();
  }

  /**
   * What the provider lets the suite control.
   *
   * @return the declared capabilities; none unless overridden
   */
  protected Set<TransferCapability> capabilities() {
    return EnumSet.noneOf(TransferCapability.class);
  }

  /**
   * The hooks for the declared capabilities of one engine.
   *
   * @param engine an engine the suite created with {@link DeviceMemory#transferEngine}
   * @param context the context its pools were opened with
   * @return the control; {@link TransferControl#NONE} unless overridden
   */
  protected TransferControl control(TransferEngine engine, BackendContext context) {
    return TransferControl.NONE;
  }

  /**
   * The KV layout of the pools the suite opens; small, so that the suite runs in seconds.
   *
   * @return 3 layers, 2 KV heads, head dim 4, 2-byte elements, 4 tokens per page
   */
  protected KvLayout layout() {
    return new KvLayout(3, 2, 4, 2, 4);
  }

  /**
   * Pages of the device pools the suite opens.
   *
   * @return 8 unless overridden
   */
  protected int devicePages() {
    return 8;
  }

  /**
   * Pages of the host pools the suite opens; differs from the device's on purpose.
   *
   * @return 12 unless overridden
   */
  protected int hostPages() {
    return 12;
  }

  /** Skips every check, with the provider's reason, when the provider cannot run here. */
  @BeforeEach
  public void requireAvailableProviders() {
    Availability device = deviceProvider().availability();
    Availability host = hostProvider().availability();
    skipUnless(
        device.available(),
        "device provider '" + deviceProvider().name() + "' is unavailable: " + device.reason());
    skipUnless(
        host.available(),
        "host provider '" + hostProvider().name() + "' is unavailable: " + host.reason());
  }

  /** Skips the running check, printing why, unless {@code condition} holds. */
  static void skipUnless(boolean condition, String reason) {
    if (!condition) {
      System.out.println("[kvtier conformance] skipped: " + reason);
    }
    assumeTrue(condition, reason);
  }

  boolean has(TransferCapability capability) {
    return capabilities().contains(capability);
  }

  /** Skips the running check unless one of {@code anyOf} is declared. */
  void requireAny(String check, TransferCapability... anyOf) {
    boolean any = Arrays.stream(anyOf).anyMatch(this::has);
    skipUnless(
        any,
        check
            + " needs one of "
            + Arrays.stream(anyOf).map(Enum::name).collect(Collectors.joining(", "))
            + " and the provider declares "
            + capabilities());
  }

  PoolSpec deviceSpec(MemoryLayout memoryLayout) {
    return new PoolSpec(layout(), devicePages(), memoryLayout);
  }

  PoolSpec hostSpec(MemoryLayout memoryLayout) {
    return new PoolSpec(layout(), hostPages(), memoryLayout);
  }

  /** Opens a device pool, a host pool and the engine between them. */
  TransferFixture open(MemoryLayout deviceLayout, MemoryLayout hostLayout) {
    BackendContext context = context();
    DeviceMemory device = deviceProvider().open(deviceSpec(deviceLayout), context);
    HostMemory host;
    try {
      host = hostProvider().open(hostSpec(hostLayout), context);
    } catch (RuntimeException e) {
      device.close();
      throw e;
    }
    TransferEngine engine;
    try {
      engine = device.transferEngine(host);
    } catch (RuntimeException e) {
      device.close();
      host.close();
      throw e;
    }
    return new TransferFixture(
        device, host, engine, control(engine, context), has(TransferCapability.VIRTUAL_TIME));
  }

  TransferFixture open() {
    return open(MemoryLayout.LAYER_FIRST, MemoryLayout.PAGE_FIRST);
  }
}
