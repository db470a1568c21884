/**
 * The simulated backend: {@code sim} device and host pools in off-heap memory ({@link
 * io.kvtier.backend.sim.SimDeviceMemoryProvider}, {@link
 * io.kvtier.backend.sim.SimHostMemoryProvider}), a transfer engine whose completion times follow
 * a seeded {@link io.kvtier.backend.sim.SimTimingModel} and whose faults tests inject through
 * {@link io.kvtier.backend.sim.SimTransferEngine#faults()}, a virtual clock ({@link
 * io.kvtier.backend.sim.ManualTimeSource}), and the {@code local} collective ({@link
 * io.kvtier.backend.sim.LocalCollectiveProvider}, ranks as threads of one JVM). All read the
 * {@code sim.*} keys of {@link io.kvtier.backend.sim.SimConfig}.
 */
package io.kvtier.backend.sim;
