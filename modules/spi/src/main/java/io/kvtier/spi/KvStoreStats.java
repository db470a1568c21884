package io.kvtier.spi;

/**
 * Counters of an L3 store since it was opened.
 *
 * @param hits pages returned by {@code get}
 * @param misses pages asked for by {@code get} and not returned (absent, or failed)
 * @param corrupt pages found damaged (checksum or size) and treated as misses
 * @param puts pages stored by {@code put}
 * @param evictions pages dropped to respect the capacity
 * @param bytesStored bytes of page data held now
 */
public record KvStoreStats(
    long hits, long misses, long corrupt, long puts, long evictions, long bytesStored) {}
