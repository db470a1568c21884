package io.kvtier.store.file;

import io.kvtier.spi.PageKey;
import java.util.LinkedHashMap;
import java.util.NoSuchElementException;

/**
 * The pages a file store knows, least recently used first. Every page has the same size, so the
 * index holds keys only. Not thread-safe: the store guards it with its lock.
 */
final class FileIndex {

  // Access order: get() and put() move a key to the most recent end.
  private final LinkedHashMap<PageKey, Boolean> pages = new LinkedHashMap<>(64, 0.75f, true);

  /** Whether the key is known; does not count as a use. */
  boolean contains(PageKey key) {
    return pages.containsKey(key);
  }

  /** Marks a known key as just used. */
  void touch(PageKey key) {
    pages.get(key);
  }

  /** Adds a key as the most recently used; true if it was not known. */
  boolean add(PageKey key) {
    return pages.put(key, Boolean.TRUE) == null;
  }

  /** Forgets a key; true if it was known. */
  boolean remove(PageKey key) {
    return pages.remove(key) != null;
  }

  /** The least recently used key. */
  PageKey eldest() {
    if (pages.isEmpty()) {
      throw new NoSuchElementException("the file index is empty");
    }
    return pages.sequencedKeySet().getFirst();
  }

  /** Known pages. */
  int size() {
    return pages.size();
  }
}
