package io.kvtier.simulator.replay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.PageKey;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class KeyOnlyStoreTest {

  /** The store's contract as a plain access-ordered map: the model the table must match. */
  private static final class Model {
    final int capacity;
    final LinkedHashMap<PageKey, Boolean> keys;
    long evictions;

    Model(int capacity) {
      this.capacity = capacity;
      this.keys =
          new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<PageKey, Boolean> eldest) {
              if (size() > Model.this.capacity) {
                evictions++;
                return true;
              }
              return false;
            }
          };
    }

    int exists(List<PageKey> prefix) {
      int n = 0;
      while (n < prefix.size() && keys.containsKey(prefix.get(n))) {
        n++;
      }
      return n;
    }

    int get(List<PageKey> prefix) {
      int n = 0;
      while (n < prefix.size() && keys.get(prefix.get(n)) != null) {
        n++;
      }
      return n;
    }

    int put(List<PageKey> pages) {
      for (PageKey k : pages) {
        keys.put(k, Boolean.TRUE);
      }
      return exists(pages);
    }
  }

  @Test
  void itKeepsWhatAnAccessOrderedMapKeeps() {
    Random random = new Random(7);
    for (int capacity : new int[] {1, 3, 1000, 5000}) {
      KeyOnlyStore store = new KeyOnlyStore(capacity);
      Model model = new Model(capacity);
      // Few distinct first words, so that many keys share a home slot and differ only later:
      // probing, backward-shift deletion and the whole-key compare all get exercised. Every fifth
      // key has a twin whose first word differs only in its high half, which no slot holds.
      List<PageKey> universe = new ArrayList<>();
      for (int i = 0; i < 3 * capacity + 50; i++) {
        long h0 = random.nextInt(Math.max(2, capacity / 4));
        PageKey key = new PageKey(h0, random.nextLong(), i % 3 == 0 ? 0 : random.nextLong(), i);
        universe.add(key);
        if (i % 5 == 0) {
          universe.add(new PageKey(h0 ^ (1L << 40), key.h1(), key.h2(), key.h3()));
        }
      }
      for (int op = 0; op < 20_000; op++) {
        int length = 1 + random.nextInt(Math.min(40, 2 * capacity + 1));
        List<PageKey> keys = new ArrayList<>(length);
        for (int i = 0; i < length; i++) {
          keys.add(universe.get(random.nextInt(universe.size())));
        }
        switch (random.nextInt(3)) {
          case 0 -> assertThat(store.put(keys, null, new int[length])).isEqualTo(model.put(keys));
          case 1 -> assertThat(store.get(keys, null, new int[length])).isEqualTo(model.get(keys));
          default -> assertThat(store.existsPrefix(keys)).isEqualTo(model.exists(keys));
        }
        assertThat(store.size()).isEqualTo(model.keys.size());
      }
      for (PageKey k : universe) {
        assertThat(store.existsPrefix(List.of(k))).isEqualTo(model.keys.containsKey(k) ? 1 : 0);
      }
      assertThat(store.stats().evictions()).isEqualTo(model.evictions);
    }
  }

  @Test
  void aPutLongerThanTheStoreKeepsOnlyItsTail() {
    KeyOnlyStore store = new KeyOnlyStore(2);
    PageKey a = new PageKey(1, 0, 0, 0);
    PageKey b = new PageKey(2, 0, 0, 0);
    PageKey c = new PageKey(3, 0, 0, 0);
    assertThat(store.put(List.of(a, b, c), null, new int[3])).isZero();
    assertThat(store.existsPrefix(List.of(b, c))).isEqualTo(2);
  }

  @Test
  void aStoreTooLargeForOneArrayIsRefused() {
    assertThatThrownBy(() -> new KeyOnlyStore(KeyOnlyStore.MAX_PAGES + 1))
        .hasMessageContaining("must be <= " + KeyOnlyStore.MAX_PAGES);
    assertThat(new KeyOnlyStore(KeyOnlyStore.MAX_PAGES).size()).isZero();
  }
}
