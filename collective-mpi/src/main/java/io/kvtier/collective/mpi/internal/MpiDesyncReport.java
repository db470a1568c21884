package io.kvtier.collective.mpi.internal;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

/**
 * The message of a desync, gathered from every rank. Runs only after a guard frame that
 * disagreed, which every rank saw identically, so every rank runs it: each rank in turn
 * broadcasts its call and recent calls (the size as one long first, then the bytes), and every
 * rank builds the same message. A cold path: it allocates its own buffers.
 */
final class MpiDesyncReport {

  private MpiDesyncReport() {}

  /**
   * Gathers every rank's view of the desync.
   *
   * @param library the binding
   * @param gate this process's calls, for the recent history
   * @param group the group's name
   * @param rank this rank
   * @param size the number of ranks
   * @param mine this rank's call
   * @param spread the reduced frame's fingerprint and sequence ranges
   * @return the message, identical on every rank
   */
  static String gather(
      MpiLibrary library,
      MpiCallGate gate,
      String group,
      int rank,
      int size,
      MpiCall mine,
      String spread) {
    StringBuilder message =
        new StringBuilder("collective desync in the mpi group '")
            .append(group)
            .append("' (MPI_COMM_WORLD, ")
            .append(size)
            .append(" ranks): ranks called different collectives (")
            .append(spread)
            .append("):");
    byte[] own =
        (mine.describe() + "; recent: " + gate.describeRecent()).getBytes(StandardCharsets.UTF_8);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment length = arena.allocate(JAVA_LONG);
      for (int r = 0; r < size; r++) {
        length.set(JAVA_LONG, 0, own.length);
        library.broadcastLongs(length, 1, r);
        int n = (int) length.get(JAVA_LONG, 0);
        byte[] line = new byte[n];
        if (n > 0) {
          MemorySegment bytes = arena.allocate(n);
          if (r == rank) {
            MemorySegment.copy(own, 0, bytes, JAVA_BYTE, 0, n);
          }
          library.broadcastBytes(bytes, n, r);
          MemorySegment.copy(bytes, JAVA_BYTE, 0, line, 0, n);
        }
        message
            .append("\n  rank ")
            .append(r)
            .append(": ")
            .append(new String(line, StandardCharsets.UTF_8));
      }
    }
    return message.toString();
  }
}
