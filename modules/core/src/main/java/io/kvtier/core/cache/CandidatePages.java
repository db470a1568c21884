package io.kvtier.core.cache;

import java.util.Arrays;
import java.util.Objects;

/**
 * The candidate pages of one L3 prefetch as the replicated side names them: {@code pages} pages
 * of {@code tokens} from {@code from}, whose chain starts at {@code prior} (the anchor's last
 * page hash, or the namespace's seed; null for the first page of namespace 0). Their chained
 * hashes are computed each once and only as far as asked (CACHE.md §12): a probe that misses at
 * the first page hashes one page, not the request; the fetch, and the host-only nodes the
 * fetched pages become, reuse what the probe hashed.
 *
 * <p>A hash is a function of the namespace and the tokens alone, so whichever side asks first
 * (a rank's probe, on a store's thread, or the replicated insert of fetched pages) gets the same
 * bytes: the replicated side reads nothing here that one rank could know and another not.
 * Synchronized, since a store may read a key list on a thread of its own.
 */
final class CandidatePages {
  private final byte[] prior;
  private final int[] tokens;
  private final int from;
  private final int pages;
  private final int pageSize;

  /** Each candidate page's chained hash; the first {@link #hashed} are known. */
  private final byte[][] hashes;

  private int hashed;

  /**
   * @param prior the hash the first candidate page chains to, or null
   * @param tokens the request's tokens (not copied: the prefetch holds them already)
   * @param from the first candidate page's first token
   * @param pages how many candidate pages
   * @param pageSize tokens per page
   */
  CandidatePages(byte[] prior, int[] tokens, int from, int pages, int pageSize) {
    this.prior = prior;
    this.tokens = Objects.requireNonNull(tokens, "tokens");
    this.from = from;
    this.pages = pages;
    this.pageSize = pageSize;
    this.hashes = new byte[pages][];
  }

  int[] tokens() {
    return tokens;
  }

  int from() {
    return from;
  }

  int pages() {
    return pages;
  }

  int pageSize() {
    return pageSize;
  }

  /** Candidate page {@code i}'s chained hash, hashing the pages before it first if needed. */
  synchronized byte[] hash(int i) {
    Objects.checkIndex(i, pages);
    if (hashed <= i) {
      byte[] previous = hashed == 0 ? prior : hashes[hashed - 1];
      while (hashed <= i) {
        previous = PageHasher.next(previous, tokens, from + hashed * pageSize, pageSize);
        hashes[hashed++] = previous;
      }
    }
    return hashes[i];
  }

  /** The chained hashes of candidate pages {@code [first, end)}, hashing what is not known. */
  synchronized byte[][] hashes(int first, int end) {
    Objects.checkFromToIndex(first, end, pages);
    if (end > first) {
      hash(end - 1);
    }
    return Arrays.copyOfRange(hashes, first, end);
  }

  /** Pages hashed so far, from the first. */
  synchronized int hashed() {
    return hashed;
  }
}
