/**
 * The {@code kvtier} command: {@code backends}, {@code simulate}, {@code replay}, {@code serve},
 * {@code route}, {@code model synth} and {@code cp-member}, and the simulation report. The serving engine, the models,
 * the HTTP API and the meters are modules of their own ({@code io.kvtier.serving}, {@code
 * io.kvtier.model.tiny}, {@code io.kvtier.server}, {@code io.kvtier.metrics}). Its run-time module path holds no test library.
 */
module io.kvtier.cli {
  requires io.kvtier.core;
  requires info.picocli;
  // kvtier simulate: the multi-rank simulator; it mutes the cache's logger for injected faults.
  requires io.kvtier.simulator;
  requires java.logging;
  // kvtier serve handles SIGINT and SIGTERM itself (sun.misc.Signal), so that a rank group stops
  // before the collectives' shutdown hooks run.
  requires jdk.unsupported;
  // kvtier serve: the serving engine, its models, its HTTP API and its meters.
  requires io.kvtier.serving;
  requires io.kvtier.model.tiny;
  // kvtier serve --model FILE.gguf: llama, qwen2 and Gemma 2/3 models on the CPU (the Vector API).
  requires io.kvtier.model.llama;
  requires io.kvtier.server;
  requires io.kvtier.metrics;
  // The JSON of simulate --json and replay --json.
  requires com.fasterxml.jackson.core;
  requires com.fasterxml.jackson.databind;
  // kvtier serve's KV events (kvtier.events.*), published by rank 0.
  requires io.kvtier.events;
  // kvtier route: the cache-aware router over serve replicas.
  requires io.kvtier.route;
  // kvtier model synth: random-weight llama files at real shapes.
  requires io.kvtier.gguf;
  // kvtier route --hazelcast-addresses: the client that reads the replicas' ringbuffers.
  requires com.hazelcast.core;
  requires micrometer.core;
  requires micrometer.registry.prometheus;

  exports io.kvtier.cli;

  opens io.kvtier.cli to
      info.picocli;
}
