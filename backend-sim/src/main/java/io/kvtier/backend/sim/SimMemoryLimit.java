package io.kvtier.backend.sim;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

/**
 * The most memory a sim pool may ask for: the machine's physical memory, or the container's
 * limit when one is set (Linux only; elsewhere there is no limit). {@code Arena.allocate}
 * zero-fills what it gets, and with memory overcommit a malloc far beyond the machine succeeds
 * and the zero-filling then gets the process killed; checking first turns that into a clear
 * error at open.
 */
final class SimMemoryLimit {

  private static final OptionalLong LIMIT = probe();

  private SimMemoryLimit() {}

  /**
   * The limit, if this platform tells.
   *
   * @return bytes, or empty when unknown
   */
  static OptionalLong bytes() {
    return LIMIT;
  }

  /**
   * Where the limit comes from, for messages.
   *
   * @return a short description
   */
  static String source() {
    return "physical memory from /proc/meminfo, or the cgroup memory.max when lower";
  }

  private static OptionalLong probe() {
    long limit = Long.MAX_VALUE;
    try {
      for (String line : readLines(Path.of("/proc/meminfo"))) {
        if (line.startsWith("MemTotal:")) {
          String kib = line.substring("MemTotal:".length()).replace("kB", "").strip();
          limit = Math.min(limit, Math.multiplyExact(Long.parseLong(kib), 1024L));
        }
      }
      for (String line : readLines(Path.of("/sys/fs/cgroup/memory.max"))) {
        if (!line.isBlank() && !line.strip().equals("max")) {
          limit = Math.min(limit, Long.parseLong(line.strip()));
        }
      }
    } catch (RuntimeException e) {
      // An unreadable or unexpected file: fall back to what the allocator says.
      return OptionalLong.empty();
    }
    return limit == Long.MAX_VALUE ? OptionalLong.empty() : OptionalLong.of(limit);
  }

  private static List<String> readLines(Path path) {
    try {
      return Files.isReadable(path) ? Files.readAllLines(path) : List.of();
    } catch (IOException | SecurityException e) {
      return List.of();
    }
  }
}
