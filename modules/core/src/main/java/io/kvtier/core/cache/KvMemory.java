package io.kvtier.core.cache;

import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
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
}
