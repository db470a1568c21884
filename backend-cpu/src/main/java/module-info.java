/**
 * The CPU backend: device and host page pools in plain off-heap RAM, and a transfer engine whose
 * copies are real memory copies run by a small pool of copier threads, with no modelled delay.
 * For serving a model that runs on the CPU, where a load-back costs what a memory copy costs.
 */
module io.kvtier.backend.cpu {
  requires transitive io.kvtier.spi;

  exports io.kvtier.backend.cpu;

  provides io.kvtier.spi.DeviceMemoryProvider with
      io.kvtier.backend.cpu.CpuDeviceMemoryProvider;
  provides io.kvtier.spi.HostMemoryProvider with
      io.kvtier.backend.cpu.CpuHostMemoryProvider;
}
