package io.kvtier.backend.cpu;

import io.kvtier.spi.PoolSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

/**
 * The most memory a {@code cpu} pool may ask for: the machine's physical memory, or the cgroup's
 * limit when lower (Linux; elsewhere no limit is known). Why: {@code Arena.allocate} zero-fills,
 * and under memory overcommit a pool far larger than the machine is granted and the zero-filling
 * then gets the process killed; checking first turns that into an error at open that says what to
 * change.
 */
final class CpuMemoryLimit {

  private static final OptionalLong LIMIT = probe();

  private CpuMemoryLimit() {}

  /**
   * Fails if the pool cannot fit in this machine's memory.
   *
   * @param kind "device" or "host", for the message
   * @param spec the pool
   * @throws IllegalArgumentException naming the pool's bytes and the limit
   */
  static void check(String kind, PoolSpec spec) {
    if (LIMIT.isPresent() && spec.bytes() > LIMIT.getAsLong()) {
      throw new IllegalArgumentException(
          "the cpu "
              + kind
              + " pool of bytes="
              + spec.bytes()
              + " (pages="
              + spec.pages()
              + " x pageBytes="
              + spec.layout().pageBytes()
              + ") exceeds this machine's memory of "
              + LIMIT.getAsLong()
              + " bytes (MemTotal of /proc/meminfo, or the cgroup's memory.max when lower):"
              + " use fewer pages");
    }
  }

  private static OptionalLong probe() {
    long limit = Long.MAX_VALUE;
    try {
      for (String line : lines(Path.of("/proc/meminfo"))) {
        if (line.startsWith("MemTotal:")) {
          String kib = line.substring("MemTotal:".length()).replace("kB", "").strip();
          limit = Math.min(limit, Math.multiplyExact(Long.parseLong(kib), 1024L));
        }
      }
      for (String line : lines(Path.of("/sys/fs/cgroup/memory.max"))) {
        String value = line.strip();
        if (!value.isEmpty() && !value.equals("max")) {
          limit = Math.min(limit, Long.parseLong(value));
        }
      }
    } catch (RuntimeException e) {
      // A file in an unexpected form: leave the decision to the allocator.
      return OptionalLong.empty();
    }
    return limit == Long.MAX_VALUE ? OptionalLong.empty() : OptionalLong.of(limit);
  }

  private static List<String> lines(Path path) {
    try {
      return Files.isReadable(path) ? Files.readAllLines(path) : List.of();
    } catch (IOException | SecurityException e) {
      return List.of();
    }
  }
}
