package io.kvtier.core.cache;

import io.kvtier.spi.PageKey;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One change of what a rank's cache holds, in page-sized blocks, as {@link CacheEventListener}
 * receives it. A block's hash is its page's chained hash ({@link PageHasher}: SHA-256 over the
 * parent page's hash and the page's tokens, the first page of a namespace other than 0 chained to
 * the namespace), so a hash names the whole prefix up to and including its page.
 */
public sealed interface CacheEvent {

  /** The medium the blocks were stored in or removed from. */
  CacheMedium medium();

  /**
   * Consecutive blocks of one tree node became present in {@code medium}.
   *
   * @param medium where they are now
   * @param namespace the tree's namespace (the LoRA or tenant the prefix belongs to)
   * @param blockHashes the blocks' chained hashes, first to last
   * @param parentHash the hash of the block before the first, empty at the start of a namespace
   * @param tokenIds the blocks' tokens, {@code blockHashes.size() * blockSize} of them
   * @param blockSize tokens per block (the page size)
   */
  record BlocksStored(
      CacheMedium medium,
      long namespace,
      List<PageKey> blockHashes,
      Optional<PageKey> parentHash,
      int[] tokenIds,
      int blockSize)
      implements CacheEvent {

    /** Validates the fields and copies the lists. */
    public BlocksStored {
      Objects.requireNonNull(medium, "medium");
      blockHashes = List.copyOf(blockHashes);
      Objects.requireNonNull(parentHash, "parentHash");
      tokenIds = tokenIds.clone();
      if (blockSize < 1 || tokenIds.length != blockHashes.size() * blockSize) {
        throw new IllegalArgumentException(
            "tokenIds.length="
                + tokenIds.length
                + " must be blockHashes.size()="
                + blockHashes.size()
                + " x blockSize="
                + blockSize);
      }
    }

    /** The tokens, a copy. */
    @Override
    public int[] tokenIds() {
      return tokenIds.clone();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof BlocksStored s
          && medium == s.medium
          && namespace == s.namespace
          && blockSize == s.blockSize
          && blockHashes.equals(s.blockHashes)
          && parentHash.equals(s.parentHash)
          && Arrays.equals(tokenIds, s.tokenIds);
    }

    @Override
    public int hashCode() {
      return Objects.hash(medium, namespace, blockHashes, parentHash, blockSize)
          ^ Arrays.hashCode(tokenIds);
    }

    @Override
    public String toString() {
      return "BlocksStored[" + medium + " ns=" + namespace + " blocks=" + blockHashes.size() + "]";
    }
  }

  /**
   * Blocks are no longer present in {@code medium} (they may still be in another: a device
   * eviction of a node backed up on the host removes it from the device only).
   *
   * @param medium where they were
   * @param blockHashes the blocks' chained hashes
   */
  record BlocksRemoved(CacheMedium medium, List<PageKey> blockHashes) implements CacheEvent {

    /** Validates the fields and copies the list. */
    public BlocksRemoved {
      Objects.requireNonNull(medium, "medium");
      blockHashes = List.copyOf(blockHashes);
    }
  }
}
