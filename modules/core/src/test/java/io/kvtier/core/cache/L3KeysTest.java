package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
  void aPageKeyIsThePinnedSaltXorPageHash() {
    byte[] salt = L3Keys.salt("model-x", 1, 2, false);
    // SHA-256("kvtier-l3" | 7 | "model-x" | 1 | 2) XOR 00 01 .. 1f, computed once with Python's
    // hashlib outside this code.
    assertThat(L3Keys.key(salt, hash(0)).toHex())
        .isEqualTo("e0f6ed1e00251bd549c37fcb0cbb51c03e17e11b6430a38e86b39540acd10a89");
  }

  @Test
  void pageKeysDifferPerSaltAndAreDistinctForDistinctPageHashes() {
    byte[] rank0 = L3Keys.salt("m", 0, 2, false);
    byte[] rank1 = L3Keys.salt("m", 1, 2, false);
    byte[] otherModel = L3Keys.salt("n", 0, 2, false);
    List<PageKey> all = new ArrayList<>();
    for (int page = 0; page < 64; page++) {
      all.add(L3Keys.key(rank0, hash(page)));
      all.add(L3Keys.key(rank1, hash(page)));
      all.add(L3Keys.key(otherModel, hash(page)));
    }
    assertThat(all).hasSize(192).doesNotHaveDuplicates();
    // Replicated KV: every rank has the same keys.
    assertThat(L3Keys.key(L3Keys.salt("m", 1, 2, true), hash(5)))
        .isEqualTo(L3Keys.key(L3Keys.salt("m", 0, 2, true), hash(5)));
    assertThatThrownBy(() -> L3Keys.key(rank0, new byte[16]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pageHash.length=16");
  }

  @Test
  void aSnapshotSlotKeyIsThePinnedDigestWithItsKindAndIndex() {
    byte[] salt = L3Keys.salt("model-x", 1, 2, false);
    // SHA-256(salt | 00 01 .. 1f | 02 | 03 00 00 00), computed by hand as above.
    assertThat(L3Keys.snapshotKey(salt, hash(0), 3).toHex())
        .isEqualTo("a04c468a24589317885af7367f6c96f6b2e9f13dbb266627406aab655171dae5");
  }

  @Test
  void snapshotKeysDifferPerSlotFromPageKeysAndPerRank() {
    byte[] salt = L3Keys.salt("m", 0, 2, false);
    List<PageKey> all = new ArrayList<>();
    for (int page = 0; page < 4; page++) {
      all.add(L3Keys.key(salt, hash(page)));
      for (int slot = 0; slot < 4; slot++) {
        all.add(L3Keys.snapshotKey(salt, hash(page), slot));
      }
    }
    assertThat(all).hasSize(20).doesNotHaveDuplicates();
    // Another rank's shard of the same snapshot has keys of its own; replicated state has one.
    assertThat(L3Keys.snapshotKey(L3Keys.salt("m", 1, 2, false), hash(0), 0))
        .isNotEqualTo(L3Keys.snapshotKey(salt, hash(0), 0));
    assertThat(L3Keys.snapshotKey(L3Keys.salt("m", 1, 2, true), hash(0), 0))
        .isEqualTo(L3Keys.snapshotKey(L3Keys.salt("m", 0, 2, true), hash(0), 0));
    assertThatThrownBy(() -> L3Keys.snapshotKey(salt, hash(0), -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("slot=-1");
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
                // Interleaved snapshot keys use the same digest of the thread.
                L3Keys.snapshotKey(salt, hash(i), i % 3);
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

  @Test
  void aPrefetchHashesAndKeysItsCandidatePagesOnceAndOnlyAsFarAsAsked() {
    byte[] salt = L3Keys.salt("m", 0, 1, false);
    int pageSize = 4;
    int[] tokens = new int[6 * pageSize];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = 1000 + i;
    }
    byte[] prior = PageHasher.seed(3);
    byte[][] chain = PageHasher.chain(prior, tokens, pageSize, 5, pageSize);
    L3Progress.Candidates candidates =
        new L3Progress.Candidates(new CandidatePages(prior, tokens, pageSize, 5, pageSize), salt);
    List<PageKey> keys = candidates.keys(1, 4);
    assertThat(keys).hasSize(3);
    assertThat(candidates.hashed()).isZero();
    // A probe that stops at the list's first key hashes the pages up to it only.
    assertThat(keys.get(0)).isEqualTo(L3Keys.key(salt, chain[1]));
    assertThat(candidates.hashed()).isEqualTo(2);
    assertThat(candidates.key(1)).isSameAs(keys.get(0));
    for (int p = 0; p < 5; p++) {
      assertThat(candidates.hash(p)).isEqualTo(chain[p]);
      assertThat(candidates.key(p)).isEqualTo(L3Keys.key(salt, chain[p]));
    }
    assertThat(candidates.keys(0, 5)).isEqualTo(PageHasherKeys.of(salt, chain));
    assertThatThrownBy(() -> keys.get(3)).isInstanceOf(IndexOutOfBoundsException.class);
    assertThatThrownBy(() -> candidates.hash(5)).isInstanceOf(IndexOutOfBoundsException.class);
    assertThatThrownBy(() -> candidates.keys(4, 6)).isInstanceOf(IndexOutOfBoundsException.class);
  }

  /** The keys of whole hashes, one by one. */
  private static final class PageHasherKeys {
    static List<PageKey> of(byte[] salt, byte[][] hashes) {
      List<PageKey> keys = new ArrayList<>();
      for (byte[] h : hashes) {
        keys.add(L3Keys.key(salt, h));
      }
      return keys;
    }
  }
}
