package io.kvtier.backend.sim;

import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.TransferHandle;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A random mix of allocations, writes, backups, loads, reads and frees that respects every rule
 * runs without a single assertion firing, and every page read holds what the model expects: the
 * wrappers do not cry wolf.
 */
@ExtendWith(SeedExtension.class)
class CorrectUseTest {

  /** A copy in flight: its handle and the two pages it touches. */
  private record Copy(TransferHandle handle, int devicePage, int hostPage) {}

  @Test
  void disciplinedUsePassesAndDataIsIntact(Random random) throws Exception {
    try (SimPools p = new SimPools()) {
      byte[] device = new byte[SimPools.PAGES];
      byte[] host = new byte[SimPools.PAGES];
      boolean[] deviceUsed = new boolean[SimPools.PAGES];
      boolean[] hostUsed = new boolean[SimPools.PAGES];
      List<Copy> inFlight = new ArrayList<>();
      int steps = TestSeeds.scaled(400);
      for (int step = 0; step < steps; step++) {
        int freeDevice = pick(random, i -> !deviceUsed[i]);
        int freeHost = pick(random, i -> !hostUsed[i]);
        // A page is idle when no copy in flight reads or writes it.
        int idleDevice =
            pick(
                random,
                i -> deviceUsed[i] && inFlight.stream().noneMatch(c -> c.devicePage() == i));
        int idleHost =
            pick(random, i -> hostUsed[i] && inFlight.stream().noneMatch(c -> c.hostPage() == i));
        switch (random.nextInt(6)) {
          case 0 -> {
            if (freeDevice >= 0) {
              p.device.ownership().allocate(freeDevice);
              deviceUsed[freeDevice] = true;
              device[freeDevice] = (byte) (1 + random.nextInt(120));
              writeAll(p.device, freeDevice, device[freeDevice]);
            }
          }
          case 1 -> {
            if (idleDevice >= 0 && freeHost >= 0) {
              p.host.ownership().allocate(freeHost);
              hostUsed[freeHost] = true;
              host[freeHost] = device[idleDevice];
              inFlight.add(
                  new Copy(p.copy(DEVICE_TO_HOST, idleDevice, freeHost), idleDevice, freeHost));
            }
          }
          case 2 -> {
            if (idleHost >= 0 && freeDevice >= 0) {
              p.device.ownership().allocate(freeDevice);
              deviceUsed[freeDevice] = true;
              device[freeDevice] = host[idleHost];
              inFlight.add(
                  new Copy(p.copy(HOST_TO_DEVICE, freeDevice, idleHost), freeDevice, idleHost));
            }
          }
          case 3 -> {
            if (idleDevice >= 0) {
              p.device.ownership().free(idleDevice);
              deviceUsed[idleDevice] = false;
            }
            if (idleHost >= 0) {
              p.host.ownership().free(idleHost);
              hostUsed[idleHost] = false;
            }
          }
          case 4 -> {
            if (idleDevice >= 0) {
              assertThat(readFirst(p.device, idleDevice)).isEqualTo(device[idleDevice]);
            }
            if (idleHost >= 0) {
              assertThat(readFirst(p.host, idleHost)).isEqualTo(host[idleHost]);
            }
          }
          default -> p.clock.advance(Duration.ofNanos(random.nextInt(20_000)));
        }
        inFlight.removeIf(c -> c.handle().isDone());
      }
      for (Copy c : inFlight) {
        p.complete(c.handle());
      }
      for (int i = 0; i < SimPools.PAGES; i++) {
        if (deviceUsed[i]) {
          assertThat(readFirst(p.device, i)).as("device page %d", i).isEqualTo(device[i]);
        }
        if (hostUsed[i]) {
          assertThat(readFirst(p.host, i)).as("host page %d", i).isEqualTo(host[i]);
        }
      }
    }
  }

  private static int pick(Random random, java.util.function.IntPredicate which) {
    int[] candidates = IntStream.range(0, SimPools.PAGES).filter(which).toArray();
    return candidates.length == 0 ? -1 : candidates[random.nextInt(candidates.length)];
  }

  private static void writeAll(io.kvtier.spi.PageMemory pool, int page, byte value) {
    for (int l = 0; l < SimPools.LAYOUT.layers(); l++) {
      pool.write(page, l, 0, SimPools.filled(value));
    }
  }

  private static byte readFirst(io.kvtier.spi.PageMemory pool, int page) {
    MemorySegment dst = SimPools.block();
    pool.read(page, SimPools.LAYOUT.layers() - 1, 0, dst);
    return dst.get(ValueLayout.JAVA_BYTE, 0);
  }
}
