package io.kvtier.testkit.conformance;

import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferEngine;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The conformance suite of a {@link io.kvtier.spi.DeviceMemoryProvider} and the transfer engine
 * of its pools. A provider module runs it with a subclass:
 *
 * <pre>{@code
 * class SimDeviceMemoryConformanceTest extends DeviceMemoryConformanceSuite {
 *   protected DeviceMemoryProvider deviceProvider() { return new SimDeviceMemoryProvider(); }
 *   protected HostMemoryProvider hostProvider() { return new SimHostMemoryProvider(); }
 * }
 * }</pre>
 *
 * <p>A subclass that declares {@link TransferCapability capabilities} also overrides {@link
 * #capabilities()} and {@link #control}, and {@link #context()} when the provider runs on a
 * virtual clock. The pool checks are here, the transfer checks in {@link DeviceTransferChecks},
 * the hooks in {@link DeviceSuiteBase}. When a provider is unavailable every check is skipped with
 * its reason.
 */
public abstract class DeviceMemoryConformanceSuite extends DeviceTransferChecks {

  /** For subclasses. */
  protected DeviceMemoryConformanceSuite() {}

  /** Each provider's {@code name()} equals its {@link io.kvtier.spi.ProviderName}. */
  @Test
  public void providersNameThemselvesAsAnnotated() {
    ProviderChecks.assertNamedAsAnnotated(deviceProvider());
    ProviderChecks.assertNamedAsAnnotated(hostProvider());
  }

  /**
   * A new pool has the spec it was opened with and is zero-filled.
   *
   * @param memoryLayout the pool's layout
   */
  @ParameterizedTest
  @EnumSource(MemoryLayout.class)
  public void openedPoolHasItsSpecAndIsZeroFilled(MemoryLayout memoryLayout) {
    PoolSpec spec = deviceSpec(memoryLayout);
    try (DeviceMemory device = deviceProvider().open(spec, context())) {
      assertThat(device.spec()).isEqualTo(spec);
      PoolChecks.assertZeroFilled(device, "device");
    }
  }

  /**
   * Bytes written to each (page, layer) block read back unchanged, and blocks do not overlap.
   *
   * @param memoryLayout the pool's layout
   * @param random seeded by the test's seed
   */
  @ParameterizedTest
  @EnumSource(MemoryLayout.class)
  public void writeReadRoundTrip(MemoryLayout memoryLayout, Random random) {
    try (DeviceMemory device = deviceProvider().open(deviceSpec(memoryLayout), context())) {
      PoolChecks.assertRoundTrip(device, "device", random);
      PoolChecks.assertPartialWriteAndRead(device, "device", random);
    }
  }

  /** Out-of-range pages, layers and offsets throw {@link IndexOutOfBoundsException}. */
  @Test
  public void outOfRangeArgumentsThrowIndexOutOfBounds() {
    try (DeviceMemory device =
        deviceProvider().open(deviceSpec(MemoryLayout.PAGE_FIRST), context())) {
      PoolChecks.assertBoundsChecked(device);
    }
  }

  /** A closed pool throws {@link IllegalStateException} on use; close is idempotent. */
  @Test
  public void closedPoolThrowsIllegalState() {
    DeviceMemory device = deviceProvider().open(deviceSpec(MemoryLayout.LAYER_FIRST), context());
    try (HostMemory host = hostProvider().open(hostSpec(MemoryLayout.LAYER_FIRST), context())) {
      device.close();
      device.close();
      PoolChecks.assertClosed(device);
      assertThatThrownBy(() -> device.transferEngine(host))
          .as("transferEngine() on a closed device pool")
          .isInstanceOf(IllegalStateException.class);
    }
  }

  /** A property of the provider's namespace that it does not know is rejected, naming the key. */
  @Test
  public void unknownPropertyIsRejected() {
    String key = deviceProvider().configNamespace() + ".conformance-no-such-key";
    BackendContext base = context();
    BackendContext bad =
        new BackendContext(base.rank(), Map.of(key, "1"), base.time(), base.metrics());
    assertThatThrownBy(
            () -> deviceProvider().open(deviceSpec(MemoryLayout.LAYER_FIRST), bad).close())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(key);
  }

  /**
   * A host pool of no provider at all works when {@link TransferCapability#FOREIGN_HOST} is
   * declared, and is rejected with {@link IllegalArgumentException} when it is not.
   *
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @Test
  public void foreignHostPoolIsUsedOrRejectedAsDeclared(Random random) throws Exception {
    BackendContext context = context();
    try (DeviceMemory device = deviceProvider().open(deviceSpec(MemoryLayout.PAGE_FIRST), context);
        HostMemory foreign = new ArenaHostMemory(hostSpec(MemoryLayout.LAYER_FIRST))) {
      if (!has(TransferCapability.FOREIGN_HOST)) {
        assertThatThrownBy(() -> device.transferEngine(foreign).close())
            .as("a device without FOREIGN_HOST given a host pool of another provider")
            .isInstanceOf(IllegalArgumentException.class);
        return;
      }
      TransferEngine engine = device.transferEngine(foreign);
      TransferFixture f =
          new TransferFixture(
              device,
              foreign,
              engine,
              control(engine, context),
              has(TransferCapability.VIRTUAL_TIME));
      byte[] data = Blocks.fillRandom(device, 1, 2, random);
      f.finish(engine.submit(Batches.single(DEVICE_TO_HOST, 1, 10)));
      assertThat(Blocks.read(foreign, 10, 2)).isEqualTo(data);
      f.finish(engine.submit(Batches.single(HOST_TO_DEVICE, 6, 10)));
      assertThat(Blocks.read(device, 6, 2)).isEqualTo(data);
      f.whileDriving(
          () -> {
            engine.close();
            return null;
          });
    }
  }

  /**
   * A host pool whose KV layout differs from the device's cannot be copied to page for page and
   * is rejected with {@link IllegalArgumentException}.
   */
  @Test
  public void hostPoolWithAnotherLayoutIsRejected() {
    KvLayout l = layout();
    KvLayout other =
        new KvLayout(l.layers(), l.kvHeads(), l.headDim(), l.dtypeBytes(), l.pageSize() + 1);
    try (DeviceMemory device =
            deviceProvider().open(deviceSpec(MemoryLayout.PAGE_FIRST), context());
        HostMemory host =
            hostProvider()
                .open(new PoolSpec(other, hostPages(), MemoryLayout.PAGE_FIRST), context())) {
      assertThatThrownBy(() -> device.transferEngine(host).close())
          .as(
              "transferEngine() with a host pool of pageSize %d for a device of pageSize %d",
              other.pageSize(), l.pageSize())
          .isInstanceOf(IllegalArgumentException.class);
    }
  }
}
