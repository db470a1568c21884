package io.kvtier.collective.hazelcast;

import io.kvtier.spi.Collective;
import io.kvtier.spi.ReduceOp;
import java.util.SplittableRandom;
import java.util.function.LongConsumer;

/**
 * A seeded script of all-reduces, broadcasts (up to 16 KiB, from every root in turn) and
 * barriers, folded into one digest. Every rank of a correct collective ends with the same
 * digest, and it does not depend on the collective: the {@code local} one gives the same.
 */
final class CollectiveWorkload {

  private CollectiveWorkload() {}

  /**
   * Plays the script as one rank.
   *
   * @param c the rank's handle
   * @param seed the script's seed
   * @param rounds rounds to play
   * @param progress told each round number before the round
   * @return the digest of every result
   */
  static long run(Collective c, long seed, int rounds, LongConsumer progress) {
    long digest = seed;
    for (int round = 0; round < rounds; round++) {
      progress.accept(round);
      SplittableRandom shared = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + round);
      SplittableRandom mine = new SplittableRandom(shared.nextLong() ^ (c.rank() + 1L) << 32);
      long[] values = new long[1 + shared.nextInt(8)];
      for (int i = 0; i < values.length; i++) {
        values[i] = mine.nextLong();
      }
      for (long v : c.allReduce(ReduceOp.values()[round % 3], values, "workload-reduce")) {
        digest = mix(digest, v);
      }
      if (round % 4 == 0) {
        int root = round / 4 % c.size();
        byte[] payload = new byte[shared.nextInt(16 * 1024)];
        if (c.rank() == root) {
          new SplittableRandom(seed ^ round).nextBytes(payload);
        }
        byte[] got = c.broadcast(root, c.rank() == root ? payload : null, "workload-bcast");
        digest = mix(digest, got.length);
        for (byte b : got) {
          digest = mix(digest, b);
        }
      }
      if (round % 16 == 15) {
        c.barrier("workload-barrier");
      }
    }
    return digest;
  }

  private static long mix(long h, long v) {
    long x = (h ^ v) * 0x9E3779B97F4A7C15L;
    return x ^ (x >>> 29);
  }
}
