/**
 * KV event publishers: the cache's block stored / removed events in vLLM's wire format (msgpack
 * over a ZeroMQ PUB socket, with a ROUTER replay socket) or in a Hazelcast ringbuffer, so that
 * cache-aware routers can learn what each replica holds (docs/EVENTS.md).
 */
module io.kvtier.events {
  requires transitive io.kvtier.core;
  requires org.zeromq.jeromq;
  requires msgpack.core;
  requires com.hazelcast.core;
  // Hazelcast is an automatic module and declares no requirements; these are the platform
  // modules it needs at run time, which a named application would otherwise not resolve.
  requires jdk.unsupported;
  requires java.transaction.xa;
  requires java.management;
  requires jdk.management;
  requires jdk.net;
  requires java.sql;
  requires java.logging;

  exports io.kvtier.events;

  provides io.kvtier.core.cache.CacheEventPublisherProvider with
      io.kvtier.events.KvEventsProvider;
}
