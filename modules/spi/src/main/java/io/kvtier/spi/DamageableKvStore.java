package io.kvtier.spi;

/**
 * A testing hook of a {@link KvStore} that can damage what it holds at rest, as a failing medium
 * would, so that a test (or {@code kvtier simulate --l3-flip-probability}) proves that the store's
 * own check catches it: a later {@link KvStore#get} of the page must count it in {@link
 * KvStoreStats#corrupt()} and treat it as a miss, never return its bytes. The engine never calls
 * it. The {@code memory}, {@code file} and {@code hazelcast} stores implement it.
 */
public interface DamageableKvStore extends KvStore {

  /**
   * Flips one bit of the stored form of a page (its payload or, where the store keeps one, its
   * header), behind the store's back: no counter changes and the page stays indexed.
   *
   * @param key the page
   * @param bit which bit, taken modulo the number of bits of the stored form (any value works)
   * @return true if the store held the page and a bit was flipped; false if it did not hold it
   */
  boolean flipStoredBit(PageKey key, long bit);
}
