package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.PageKey;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * The L3 keys are a stored format: a store written by one build is read by the next, so the
 * bytes of a key are pinned here, against a digest computed by hand, and stay the same when
 * the keys are computed on many threads at once (the digest is reused per thread).
 */
class L3KeysTest {

  private static byte[] hash(int seed) {
    byte[] h = new byte[32];
    for (int i = 0; i < 32; i++) {
      h[i] = (byte) i;
    }
    for (int i = 0; i < 4; i++) {
      h[i] ^= (byte) (seed >>> (8 * i));
    }
    return h;
  }

  @Test
  void aPageKeyIsThePinnedDigestOfSaltAndPageHash() {
    byte[] salt = L3Keys.salt("model-x", 1, 2, false);
    // SHA-256("kvtier-l3" | 7 | "model-x" | 1 | 2) then SHA-256(salt | 00 01 .. 1f), computed
    // once with a fresh MessageDigest outside this code.
    assertThat(L3Keys.key(salt, hash(0)).toHex())
        .isEqualTo("2c61aae26ebb0b5b2a5de2f491776cc338a53499d5985cb4ec324d74001bbe0e");
  }

  @Test
  void keysComputedOnManyThreadsAtOnceAreTheKeysOfOneThread() throws Exception {
    byte[] salt = L3Keys.salt("m", 0, 1, false);
    int n = 2_000;
    List<PageKey> expected = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      expected.add(L3Keys.key(salt, hash(i)));
    }
    assertThat(expected).doesNotHaveDuplicates();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<List<PageKey>>> futures = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        Callable<List<PageKey>> task =
            () -> {
              List<PageKey> keys = new ArrayList<>(n);
              for (int i = 0; i < n; i++) {
                keys.add(L3Keys.key(salt, hash(i)));
              }
              return keys;
            };
        futures.add(pool.submit(task));
      }
      for (Future<List<PageKey>> f : futures) {
        assertThat(f.get()).isEqualTo(expected);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
