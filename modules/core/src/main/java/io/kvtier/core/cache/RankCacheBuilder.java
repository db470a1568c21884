package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.TransferEngine;
import java.util.Objects;
import java.util.Optional;

/**
 * Builds a {@link RankCache} from the parts {@link RankCache}'s factories take, plus a {@link
 * CacheEventListener}: {@code RankCache.builder(config).device(d).host(h, transfers).l3(setup)
 * .events(listener).build()}. Each part may be given once; the checks are the factories'.
 */
public final class RankCacheBuilder {
  private final CacheConfig config;
  private DeviceMemory device;
  private HostMemory host;
  private TransferEngine transfers;
  private L3Setup l3;
  private CacheEventListener listener = CacheEventListener.NONE;

  RankCacheBuilder(CacheConfig config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /**
   * The device pool; without one the cache manages slots only (hostPages must be 0).
   *
   * @param device the device pool
   * @return this builder
   */
  public RankCacheBuilder device(DeviceMemory device) {
    Objects.requireNonNull(device, "device");
    checkUnset("device", this.device);
    this.device = device;
    return this;
  }

  /**
   * The host pool and the engine between it and the device pool ({@code
   * device.transferEngine(host)}).
   *
   * @param host the host pool
   * @param transfers the transfer engine
   * @return this builder
   */
  public RankCacheBuilder host(HostMemory host, TransferEngine transfers) {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(transfers, "transfers");
    checkUnset("host", this.host);
    this.host = host;
    this.transfers = transfers;
    return this;
  }

  /**
   * An L3 tier (needs a device and a host pool).
   *
   * @param l3 the L3 setup
   * @return this builder
   */
  public RankCacheBuilder l3(L3Setup l3) {
    Objects.requireNonNull(l3, "l3");
    checkUnset("l3", this.l3);
    this.l3 = l3;
    return this;
  }

  /**
   * The listener for the cache's KV events; {@link CacheEventListener#NONE} by default.
   *
   * @param listener the listener
   * @return this builder
   */
  public RankCacheBuilder events(CacheEventListener listener) {
    Objects.requireNonNull(listener, "listener");
    checkUnset("events", this.listener == CacheEventListener.NONE ? null : this.listener);
    this.listener = listener;
    return this;
  }

  /**
   * The cache.
   *
   * @return a new cache over the parts given
   * @throws IllegalStateException if a host pool or an L3 tier was given without the parts it
   *     needs
   */
  public RankCache build() {
    if (device == null) {
      if (host != null || l3 != null) {
        throw new IllegalStateException(
            "a host pool or an L3 tier needs a device pool: call device(...) too");
      }
      if (config.hostPages() != 0) {
        throw new IllegalArgumentException(
            "hostPages="
                + config.hostPages()
                + " but a cache without memory cannot copy pages to a host tier: set hostPages=0,"
                + " or give device(...) and host(...)");
      }
      return new RankCache(config, Optional.empty(), null, listener);
    }
    if (host == null) {
      if (l3 != null) {
        throw new IllegalStateException("an L3 tier needs a host pool: call host(...) too");
      }
      return new RankCache(
          config, Optional.of(KvMemory.deviceOnly(config, device)), null, listener);
    }
    return new RankCache(
        config, Optional.of(KvMemory.withHost(config, device, host, transfers)), l3, listener);
  }

  private static void checkUnset(String part, Object current) {
    if (current != null) {
      throw new IllegalStateException(part + " was already set to " + current);
    }
  }
}
