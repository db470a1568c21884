package io.kvtier.collective.hazelcast;

import com.hazelcast.config.InMemoryFormat;
import com.hazelcast.config.InvalidConfigurationException;
import com.hazelcast.config.MapConfig;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.kvtier.spi.DamageableKvStore;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * The {@code hazelcast} L3 store: an {@code IMap} named {@code kvtier.l3.<namespace>} from the
 * page key's hex to the page's {@linkplain HazelcastPageCodec stored form}, shared by every
 * kvtier instance of the cluster, so that a second server finds pages the first computed.
 *
 * <p>Size bound: the store, not Hazelcast, evicts. Hazelcast's own max-size eviction is enforced
 * per partition (so a small capacity is over- or under-shot by up to a page per partition) and
 * is fixed in the cluster's map configuration by whoever creates the map first, so it can give
 * neither an exact {@code bytesStored <= capacityBytes} nor a capacity per opener. After each
 * put the store reads the map's size and evicts ({@link IMap#evict}) the least recently used
 * pages it knows of, then, if that is not enough (pages of other kvtier instances), any pages.
 * Within a batch the head of a prefix counts as more recent than its tail, since a prefix
 * without its head is useless. With several instances writing one map the bound holds after
 * each of their puts, but the LRU order is each instance's own.
 *
 * <p>Failures: an unreachable cluster, a missing page and a damaged page are misses (counted),
 * never exceptions from {@code get} or {@code existsPrefix} and never data; a damaged page is
 * removed from the map when found.
 */
final class HazelcastKvStore implements DamageableKvStore {

  private static final System.Logger LOG = System.getLogger(HazelcastKvStore.class.getName());

  private final IMap<String, byte[]> map;
  private final KvLayout layout;
  private final HazelcastPageCodec codec;
  private final long capacityPages;
  private final Runnable release;

  /** Pages this store put and has not seen go, least recently used first; guarded by itself. */
  private final LinkedHashMap<String, Boolean> recency = new LinkedHashMap<>(16, 0.75f, true);

  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();
  private final LongAdder corrupt = new LongAdder();
  private final LongAdder puts = new LongAdder();
  private final LongAdder evictions = new LongAdder();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicBoolean clusterFailureLogged = new AtomicBoolean();
  private volatile long lastBytesStored;

  private HazelcastKvStore(IMap<String, byte[]> map, KvStoreSpec spec, Runnable release) {
    this.map = map;
    this.layout = spec.layout();
    this.codec = new HazelcastPageCodec(spec.layout());
    this.capacityPages = spec.capacityBytes() / spec.layout().pageBytes();
    this.release = release;
  }

  /**
   * The map name of a namespace.
   *
   * @param namespace the spec's namespace
   * @return {@code kvtier.l3.<namespace>}
   */
  static String mapName(String namespace) {
    return "kvtier.l3." + namespace;
  }

  /**
   * Opens the store of a namespace on an instance and trims the map to the spec's capacity.
   *
   * @param hazelcast the member or client
   * @param spec layout, capacity and namespace
   * @param backupCount synchronous backups per page
   * @param release what to do on close
   * @return the store
   * @throws IllegalArgumentException if the map exists with another backup count
   */
  static HazelcastKvStore open(
      HazelcastInstance hazelcast, KvStoreSpec spec, int backupCount, Runnable release) {
    String name = mapName(spec.namespace());
    MapConfig config =
        new MapConfig(name).setBackupCount(backupCount).setInMemoryFormat(InMemoryFormat.BINARY);
    try {
      hazelcast.getConfig().addMapConfig(config);
    } catch (InvalidConfigurationException e) {
      throw new IllegalArgumentException(
          "the L3 map "
              + name
              + " already exists in the cluster with other settings than"
              + " backup count "
              + backupCount
              + ": set "
              + HazelcastConfig.STORE_BACKUP_COUNT
              + " as the other kvtier instances do, or use another namespace ("
              + e.getMessage()
              + ")",
          e);
    }
    HazelcastKvStore store = new HazelcastKvStore(hazelcast.getMap(name), spec, release);
    synchronized (store.recency) {
      store.trim();
    }
    return store;
  }

  @Override
  public int existsPrefix(List<PageKey> keys) {
    checkKeys(keys);
    checkOpen();
    int present = 0;
    try {
      // One call per key, stopping at the first absent one: batching would need an entry
      // processor, whose class every member of an external cluster would have to load.
      for (PageKey key : keys) {
        if (!map.containsKey(key.toHex())) {
          break;
        }
        present++;
      }
    } catch (RuntimeException e) {
      clusterFailed("existsPrefix", e);
    }
    return present;
  }

  @Override
  public int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
    checkArguments(keys, host, hostPages);
    checkOpen();
    Map<String, byte[]> found;
    try {
      Set<String> hex = new HashSet<>();
      for (PageKey key : keys) {
        hex.add(key.toHex());
      }
      found = hex.isEmpty() ? Map.of() : map.getAll(hex);
    } catch (RuntimeException e) {
      clusterFailed("get", e);
      found = Map.of();
    }
    int loaded = 0;
    for (int i = 0; i < keys.size(); i++) {
      String hex = keys.get(i).toHex();
      byte[] value = found.get(hex);
      if (value == null) {
        break;
      }
      if (!codec.intact(keys.get(i), value)) {
        dropDamaged(hex, value);
        break;
      }
      codec.decodeInto(value, host, hostPages[i]);
      loaded++;
    }
    synchronized (recency) {
      for (int i = loaded - 1; i >= 0; i--) {
        recency.get(keys.get(i).toHex());
      }
    }
    hits.add(loaded);
    misses.add(keys.size() - loaded);
    return loaded;
  }

  @Override
  public int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
    checkArguments(keys, host, hostPages);
    checkOpen();
    if (keys.isEmpty()) {
      return 0;
    }
    Map<String, byte[]> values = new LinkedHashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      values.put(keys.get(i).toHex(), codec.encode(keys.get(i), host, hostPages[i]));
    }
    synchronized (recency) {
      try {
        map.setAll(values);
      } catch (RuntimeException e) {
        clusterFailed("put", e);
        return existsPrefix(keys);
      }
      for (int i = keys.size() - 1; i >= 0; i--) {
        if (recency.put(keys.get(i).toHex(), Boolean.TRUE) == null) {
          puts.increment();
        }
      }
      trim();
      int present = 0;
      while (present < keys.size() && recency.containsKey(keys.get(present).toHex())) {
        present++;
      }
      return present;
    }
  }

  /** Evicts until the map holds at most the capacity; the caller holds the recency lock. */
  private void trim() {
    long excess;
    try {
      excess = map.size() - capacityPages;
    } catch (RuntimeException e) {
      clusterFailed("size", e);
      return;
    }
    var known = recency.keySet().iterator();
    var foreign = excess > recency.size() ? map.keySet().iterator() : null;
    while (excess > 0) {
      String victim;
      if (known.hasNext()) {
        victim = known.next();
        known.remove();
      } else if (foreign != null && foreign.hasNext()) {
        victim = foreign.next();
      } else {
        return;
      }
      // false: someone else removed it already, so it freed nothing here
      if (map.evict(victim)) {
        evictions.increment();
        excess--;
      }
    }
  }

  /** Flips a bit of the map's value: its header or payload, each covered by a CRC32C. */
  @Override
  public boolean flipStoredBit(PageKey key, long bit) {
    checkOpen();
    String hex = key.toHex();
    byte[] value = map.get(hex);
    if (value == null || value.length == 0) {
      return false;
    }
    long at = Math.floorMod(bit, 8L * value.length);
    byte[] flipped = value.clone();
    flipped[(int) (at / 8)] ^= (byte) (1 << (int) (at % 8));
    // Only if the stored value is still the one read: a put meanwhile must stay whole.
    return map.replace(hex, value, flipped);
  }

  private void dropDamaged(String hex, byte[] value) {
    corrupt.increment();
    try {
      // only this damaged value: a good copy put meanwhile must stay
      map.remove(hex, value);
    } catch (RuntimeException e) {
      clusterFailed("remove", e);
    }
    synchronized (recency) {
      recency.remove(hex);
    }
  }

  @Override
  public KvStoreStats stats() {
    try {
      lastBytesStored = map.size() * layout.pageBytes();
    } catch (RuntimeException e) {
      // keeps the last value read: stats must not fail because the cluster does
    }
    return new KvStoreStats(
        hits.sum(), misses.sum(), corrupt.sum(), puts.sum(), evictions.sum(), lastBytesStored);
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      release.run();
    }
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("the hazelcast store of map " + map.getName() + " is closed");
    }
  }

  private static void checkKeys(List<PageKey> keys) {
    Objects.requireNonNull(keys, "keys");
    for (int i = 0; i < keys.size(); i++) {
      Objects.requireNonNull(keys.get(i), "keys[" + i + "]");
    }
  }

  /** Rejects bad arguments before anything is read, written or counted. */
  private void checkArguments(List<PageKey> keys, HostMemory host, int[] hostPages) {
    checkKeys(keys);
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(hostPages, "hostPages");
    if (keys.size() != hostPages.length) {
      throw new IllegalArgumentException(
          "keys.size()="
              + keys.size()
              + " but hostPages.length="
              + hostPages.length
              + ": pass one host page per key");
    }
    if (!host.spec().layout().equals(layout)) {
      throw new IllegalArgumentException(
          "the host pool's layout "
              + host.spec().layout()
              + " differs from the store's "
              + layout
              + ": open the store with the host pool's layout");
    }
    int pages = host.spec().pages();
    for (int i = 0; i < hostPages.length; i++) {
      if (hostPages[i] < 0 || hostPages[i] >= pages) {
        throw new IndexOutOfBoundsException(
            "hostPages[" + i + "]=" + hostPages[i] + " pages=" + pages);
      }
    }
  }

  private void clusterFailed(String operation, RuntimeException e) {
    if (clusterFailureLogged.compareAndSet(false, true)) {
      LOG.log(
          System.Logger.Level.WARNING,
          "L3 map "
              + map.getName()
              + ": "
              + operation
              + " failed; such failures count as misses and are not logged again: "
              + e);
    }
  }
}
