package io.kvtier.collective.hazelcast;

import com.hazelcast.map.IMap;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.PageKey;
import io.kvtier.testkit.conformance.KvStoreCapability;
import io.kvtier.testkit.conformance.KvStoreConformanceSuite;
import io.kvtier.testkit.conformance.KvStoreDamage;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The store suite on a cluster of 2 members (no CP subsystem: the store does not need it) that
 * the stores reach as clients, so that pages outlive a store and two stores share them.
 */
class HazelcastKvStoreConformanceTest extends KvStoreConformanceSuite {

  private static HazelcastTestCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = HazelcastTestCluster.start(2, Map.of(HazelcastConfig.CP_MEMBER_COUNT, "0"));
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  @Override
  protected KvStoreProvider provider() {
    return new HazelcastKvStoreProvider();
  }

  @Override
  protected BackendContext context() {
    return cluster.clientContext();
  }

  @Override
  protected Set<KvStoreCapability> capabilities() {
    return EnumSet.allOf(KvStoreCapability.class);
  }

  @Override
  protected void damage(
      KvStoreSpec spec, BackendContext context, PageKey key, KvStoreDamage damage, Random random) {
    IMap<String, byte[]> map = cluster.member(0).getMap(HazelcastKvStore.mapName(spec.namespace()));
    byte[] value = map.get(key.toHex());
    switch (damage) {
      case TRUNCATED ->
          map.set(key.toHex(), Arrays.copyOf(value, 1 + random.nextInt(value.length - 1)));
      case FLIPPED_BIT -> {
        // Through the store's own hook (DamageableKvStore), from a second store on the map.
        try (var other = (io.kvtier.spi.DamageableKvStore) provider().open(spec, context)) {
          if (!other.flipStoredBit(key, random.nextLong())) {
            throw new IllegalStateException("the map does not hold " + key);
          }
        }
      }
      case EMPTIED -> map.set(key.toHex(), new byte[0]);
      case REMOVED -> map.delete(key.toHex());
    }
  }
}
