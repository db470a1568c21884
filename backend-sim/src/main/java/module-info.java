/**
 * The simulated backend: device and host page pools in off-heap memory, a transfer engine whose
 * completion follows a seedable timing model with fault injection, and the {@code local}
 * collective (ranks as threads of one JVM).
 */
module io.kvtier.backend.sim {
  requires io.kvtier.spi;

  exports io.kvtier.backend.sim;
}
