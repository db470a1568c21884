package io.kvtier.store.memory;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.ProviderName;
import io.kvtier.testkit.conformance.KvStoreConformanceSuite;
import java.util.Arrays;
import java.util.List;

/** Stores with one deliberate defect each, over the {@code memory} store, for the suite's tests. */
final class BrokenStores {

  private BrokenStores() {}

  /** What is wrong. */
  enum Defect {
    /** existsPrefix counts every present key, not only the consecutive ones from the first. */
    EXISTS_COUNTS_PAST_GAPS,
    /** get goes on past an absent page and returns how many it loaded. */
    GET_SKIPS_ABSENT_PAGES,
    /** get answers how many are present but copies nothing. */
    GET_COPIES_NOTHING,
    /** put stores as many pages as the shorter of keys and host pages, without complaint. */
    PUT_IGNORES_A_LENGTH_MISMATCH
  }

  /**
   * The suite over a broken store. Never selected as a test class (a nested class): the tests
   * call its checks one at a time and expect them to fail.
   */
  static final class Suite extends KvStoreConformanceSuite {
    private final Defect defect;

    Suite(Defect defect) {
      this.defect = defect;
    }

    @Override
    protected KvStoreProvider provider() {
      return new Provider(defect);
    }
  }

  @ProviderName("broken-store")
  static final class Provider implements KvStoreProvider {
    private final Defect defect;

    Provider(Defect defect) {
      this.defect = defect;
    }

    @Override
    public String name() {
      return "broken-store";
    }

    @Override
    public Availability availability() {
      return Availability.available("broken on purpose: " + defect);
    }

    @Override
    public String configNamespace() {
      return "memory";
    }

    @Override
    public KvStore open(KvStoreSpec spec, BackendContext context) {
      return new Store(
          Providers.named(KvStoreProvider.class, "memory").open(spec, context), defect);
    }
  }

  private record Store(KvStore delegate, Defect defect) implements KvStore {

    @Override
    public int existsPrefix(List<PageKey> keys) {
      if (defect != Defect.EXISTS_COUNTS_PAST_GAPS) {
        return delegate.existsPrefix(keys);
      }
      int n = 0;
      for (PageKey key : keys) {
        n += delegate.existsPrefix(List.of(key));
      }
      return n;
    }

    @Override
    public int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
      return switch (defect) {
        case GET_SKIPS_ABSENT_PAGES -> {
          int n = 0;
          for (int i = 0; i < keys.size(); i++) {
            n += delegate.get(List.of(keys.get(i)), host, new int[] {hostPages[i]});
          }
          yield n;
        }
        case GET_COPIES_NOTHING -> delegate.existsPrefix(keys);
        default -> delegate.get(keys, host, hostPages);
      };
    }

    @Override
    public int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
      if (defect == Defect.PUT_IGNORES_A_LENGTH_MISMATCH && keys.size() != hostPages.length) {
        int n = Math.min(keys.size(), hostPages.length);
        return delegate.put(keys.subList(0, n), host, Arrays.copyOf(hostPages, n));
      }
      return delegate.put(keys, host, hostPages);
    }

    @Override
    public KvStoreStats stats() {
      return delegate.stats();
    }

    @Override
    public void close() {
      delegate.close();
    }
  }
}
