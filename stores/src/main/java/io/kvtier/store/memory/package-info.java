/**
 * The {@code memory} L3 store: pages in off-heap memory of this JVM, kept by a Caffeine cache
 * bounded by bytes ({@link io.kvtier.store.memory.MemoryKvStoreProvider}). Each store instance is
 * its own cache; nothing outlives {@code close()}.
 */
package io.kvtier.store.memory;
