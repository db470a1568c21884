/**
 * The simulated backend: device and host page pools in off-heap memory, a transfer engine whose
 * completion follows a seedable timing model with fault injection, and the {@code local}
 * collective (ranks as threads of one JVM).
 */
module io.kvtier.backend.sim {
  requires transitive io.kvtier.spi;

  exports io.kvtier.backend.sim;

  provides io.kvtier.spi.DeviceMemoryProvider with
      io.kvtier.backend.sim.SimDeviceMemoryProvider;
  provides io.kvtier.spi.HostMemoryProvider with
      io.kvtier.backend.sim.SimHostMemoryProvider;
  provides io.kvtier.spi.CollectiveProvider with
      io.kvtier.backend.sim.LocalCollectiveProvider;
}
