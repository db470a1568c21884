/** The OpenAI-compatible HTTP API on a {@link io.kvtier.serving.GenerationEngine}. */
package io.kvtier.server;
