/** Guice wiring of the engine from a {@link io.kvtier.core.config.KvTierConfig}. */
package io.kvtier.core.inject;
