/**
 * {@code kvtier route}: an OpenAI-compatible HTTP front over several {@code kvtier serve}
 * replicas that learns what each caches from their KV events and sends each request where its
 * prefix is cached (docs/EVENTS.md, "Routing").
 */
module io.kvtier.route {
  requires io.kvtier.core;
  requires io.kvtier.events;
  requires com.hazelcast.core;
  requires org.zeromq.jeromq;
  requires msgpack.core;
  requires jdk.httpserver;
  requires java.net.http;
  requires com.fasterxml.jackson.databind;
  requires micrometer.core;
  requires micrometer.registry.prometheus;

  exports io.kvtier.route;
}
