/**
 * The {@code cpu} device and host pools and their transfer engine. Select them with {@code
 * kvtier.device=cpu} and {@code kvtier.host=cpu}; the keys of the {@code cpu.} namespace are in
 * {@link io.kvtier.backend.cpu.CpuConfig}.
 */
package io.kvtier.backend.cpu;
