/**
 * The Hazelcast backend of kvtier: the {@code hazelcast} collective (rank agreement on the CP
 * subsystem of Hazelcast 5.4.0, ranks as separate processes) and the {@code hazelcast} L3 store
 * (an {@code IMap} of pages shared by every kvtier instance of the cluster).
 */
module io.kvtier.collective.hazelcast {
  requires transitive io.kvtier.spi;
  // transitive: HazelcastCollectives takes a HazelcastInstance
  requires transitive com.hazelcast.core;
  // Hazelcast is an automatic module and declares no requirements; these are the platform
  // modules it needs at run time, which a named application would otherwise not resolve.
  requires jdk.unsupported;
  requires java.transaction.xa;
  requires java.management;
  requires jdk.management;
  requires jdk.net;
  requires java.sql;
  requires java.logging;

  exports io.kvtier.collective.hazelcast;

  provides io.kvtier.spi.CollectiveProvider with
      io.kvtier.collective.hazelcast.HazelcastCollectiveProvider;
  provides io.kvtier.spi.KvStoreProvider with
      io.kvtier.collective.hazelcast.HazelcastKvStoreProvider;
}
