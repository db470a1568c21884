package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.TransferEngine;
import java.util.Objects;
import java.util.Optional;

/**
 * The memory a cache copies pages in: the device pool and, with a host tier, the host pool and
 * the transfer engine between them.
 *
 * @param device the device pool
 * @param host the host pool, empty without a host tier
 * @param engine the transfer engine, present exactly when {@code host} is
 * @param layers the number of layers of the KV layout
 */
record KvMemory(
    DeviceMemory device, Optional<HostMemory> host, Optional<TransferEngine> engine, int layers) {

  KvMemory {
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(engine, "engine");
    if (host.isPresent() != engine.isPresent()) {
      throw new IllegalArgumentException("a host pool needs a transfer engine and vice versa");
    }
  }

  /** A device pool alone, checked against the config (which must have no host tier). */
  static KvMemory deviceOnly(CacheConfig config, DeviceMemory device) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(device, "device");
    if (config.hostPages() != 0) {
      throw new IllegalArgumentException(
          "hostPages="
              + config.hostPages()
              + " needs a host pool and a transfer engine: use withMemory(config, device, host,"
              + " transfers)");
    }
    checkPool(
        "device", device.spec().pages(), config.devicePages(), device.spec().layout(), config);
    return new KvMemory(
        device, Optional.empty(), Optional.empty(), device.spec().layout().layers());
  }

  /** A device pool, a host pool and the engine between them, checked against the config. */
  static KvMemory withHost(
      CacheConfig config, DeviceMemory device, HostMemory host, TransferEngine transfers) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(transfers, "transfers");
    if (config.hostPages() == 0) {
      throw new IllegalArgumentException(
          "hostPages=0 but a host pool was given: set hostPages or use withMemory(config, device)");
    }
    KvLayout layout = device.spec().layout();
    checkPool("device", device.spec().pages(), config.devicePages(), layout, config);
    checkPool("host", host.spec().pages(), config.hostPages(), host.spec().layout(), config);
    if (!layout.equals(host.spec().layout())) {
      throw new IllegalArgumentException(
          "device layout "
              + layout
              + " differs from host layout "
              + host.spec().layout()
              + ": open both pools with the same KvLayout");
    }
    return new KvMemory(device, Optional.of(host), Optional.of(transfers), layout.layers());
  }

  private static void checkPool(
      String name, int pages, int expected, KvLayout layout, CacheConfig config) {
    if (pages != expected) {
      throw new IllegalArgumentException(
          name
              + " pool has "
              + pages
              + " pages but the config says "
              + expected
              + ": open the pool with the configured page count");
    }
    if (layout.pageSize() != config.pageSize()) {
      throw new IllegalArgumentException(
          name
              + " pool pageSize="
              + layout.pageSize()
              + " differs from config pageSize="
              + config.pageSize());
    }
  }
}
