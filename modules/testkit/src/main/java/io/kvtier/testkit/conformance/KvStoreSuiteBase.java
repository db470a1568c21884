package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.PoolSpec;
import io.kvtier.testkit.SeedExtension;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The hooks of {@link KvStoreConformanceSuite}: what a store module supplies, and the helpers the
 * checks share. Split from the checks only to keep each class readable; subclass {@link
 * KvStoreConformanceSuite}.
 *
 * <p>Each test method gets its own store namespace (unique in the process and across processes
 * on one machine), so a shared store, such as a cluster that outlives the test, starts empty in
 * every check. Everything a check opens is closed after it.
 */
@ExtendWith(SeedExtension.class)
@Timeout(120)
public abstract class KvStoreSuiteBase {

  /** Host pages of every pool the suite opens: batches use 0..7, get targets 8..15. */
  static final int HOST_PAGES = 16;

  private static final AtomicLong NAMESPACES = new AtomicLong();

  private final String namespace =
      "conformance-" + ProcessHandle.current().pid() + "-" + NAMESPACES.incrementAndGet();
  private final Deque<AutoCloseable> opened = new ArrayDeque<>();

  /** For subclasses. */
  protected KvStoreSuiteBase() {}

  /**
   * The store provider under test.
   *
   * @return the provider; a new or a shared instance
   */
  protected abstract KvStoreProvider provider();

  /**
   * The context every store is opened with. Called once per open; it must give the same store
   * location every time within one test (the {@code file} store's directory, a cluster), since
   * the persistence and sharing checks open a second store on the first one's data.
   *
   * @return {@link BackendContext#defaults()} unless overridden
   */
  protected BackendContext context() {
    return BackendContext.defaults();
  }

  /**
   * What the store does beyond the common contract.
   *
   * @return the declared capabilities; none unless overridden
   */
  protected Set<KvStoreCapability> capabilities() {
    return EnumSet.noneOf(KvStoreCapability.class);
  }

  /**
   * Damages the stored form of one page behind the store's back; called only when {@link
   * KvStoreCapability#DAMAGEABLE} is declared, while a store opened with {@code spec} and {@code
   * context} is open and holds the page.
   *
   * @param spec the spec the store was opened with (its namespace locates the data)
   * @param context the context it was opened with
   * @param key the page to damage
   * @param damage what to do to it
   * @param random where to draw positions and lengths from, seeded by the test's seed
   * @throws Exception if the damage cannot be done; the check fails with it
   */
  protected void damage(
      KvStoreSpec spec, BackendContext context, PageKey key, KvStoreDamage damage, Random random)
      throws Exception {
    throw new UnsupportedOperationException(
        "declare KvStoreCapability.DAMAGEABLE only together with an override of damage()");
  }

  /**
   * The KV layout of the pages; several layers, so that a store that mixes up layers shows.
   *
   * @return 3 layers, 2 KV heads, head dim 4, 2-byte elements, 4 tokens per page
   */
  protected KvLayout layout() {
    return new KvLayout(3, 2, 4, 2, 4);
  }

  /**
   * The provider of the host pools that pages move to and from.
   *
   * @return the {@code sim} host provider, found by name: put kvtier-backend-sim on the test path,
   *     or override
   */
  protected HostMemoryProvider hostProvider() {
    return Providers.named(HostMemoryProvider.class, "sim");
  }

  /** Skips every check, with the provider's reason, when the provider cannot run here. */
  @BeforeEach
  public void requireAvailableProvider() {
    Availability a = provider().availability();
    DeviceSuiteBase.skipUnless(
        a.available(), "store provider '" + provider().name() + "' is unavailable: " + a.reason());
  }

  /**
   * Closes the stores and host pools the check opened, newest first.
   *
   * @throws Exception the first failure of a close, after trying them all
   */
  @AfterEach
  public void closeOpened() throws Exception {
    Exception first = null;
    while (!opened.isEmpty()) {
      try {
        opened.pop().close();
      } catch (Exception e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  /** The namespace of this test's stores. */
  final String namespace() {
    return namespace;
  }

  final long pageBytes() {
    return layout().pageBytes();
  }

  final KvStoreSpec spec(long capacityBytes) {
    return new KvStoreSpec(layout(), capacityBytes, namespace);
  }

  final KvStore open(KvStoreSpec spec) {
    KvStore store = provider().open(spec, context());
    assertThat(store).as("open() of provider '%s'", provider().name()).isNotNull();
    opened.push(store);
    return store;
  }

  final KvStore openPages(int capacityPages) {
    return open(spec(capacityPages * pageBytes()));
  }

  final HostMemory host(MemoryLayout memoryLayout) {
    return host(new PoolSpec(layout(), HOST_PAGES, memoryLayout));
  }

  final HostMemory host(PoolSpec spec) {
    HostMemory host = hostProvider().open(spec, BackendContext.defaults());
    opened.push(host);
    return host;
  }

  final boolean has(KvStoreCapability capability) {
    return capabilities().contains(capability);
  }

  /** Fills host pages {@code 0..n-1} with the keys' pages and puts them in one batch. */
  static int putAll(KvStore store, HostMemory host, List<PageKey> keys, int version) {
    for (int i = 0; i < keys.size(); i++) {
      StorePages.fill(host, i, keys.get(i), version);
    }
    return store.put(keys, host, StorePages.run(0, keys.size()));
  }

  /** How many of the keys are present, each asked on its own. */
  static int present(KvStore store, List<PageKey> keys) {
    int n = 0;
    for (PageKey key : keys) {
      n += store.existsPrefix(List.of(key));
    }
    return n;
  }
}
