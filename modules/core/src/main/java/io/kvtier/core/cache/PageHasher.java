package io.kvtier.core.cache;

import io.kvtier.spi.PageKey;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Chained SHA-256 page hashes, the L3 keys of pages (CACHE.md §1, §12): the hash of a page
 * is SHA-256 over the previous page's 32-byte hash (absent for the first page) followed by the
 * page's token ids as 4-byte little-endian integers. In a namespace other than 0 the first page
 * is chained to SHA-256 of the namespace as an 8-byte little-endian integer, so namespaces never
 * share a key. Computed only when asked for, never on the request path.
 */
public final class PageHasher {
  /**
   * One digest and token buffer per thread ({@code digest()} resets the digest), so that hashing
   * a node's or a prefetch's pages makes no digest object (CACHE.md §12): chains are hashed a page
   * at a time on the thread that asks.
   */
  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  private static final class Scratch {
    final MessageDigest md = sha256();
    byte[] buffer = new byte[0];

    byte[] buffer(int pageSize) {
      if (buffer.length < 4 * pageSize) {
        buffer = new byte[4 * pageSize];
      }
      return buffer;
    }
  }

  private PageHasher() {}

  /**
   * The page keys of a page-aligned token sequence from the root of a namespace.
   *
   * @param namespace the namespace
   * @param tokens the tokens, a whole number of pages
   * @param pageSize tokens per page
   * @return one key per page
   * @throws MisalignedKeyException if {@code tokens.length} is not a multiple of {@code pageSize}
   */
  public static List<PageKey> pageKeys(long namespace, int[] tokens, int pageSize) {
    Objects.requireNonNull(tokens, "tokens");
    if (pageSize < 1) {
      throw new IllegalArgumentException("pageSize=" + pageSize + " must be >= 1");
    }
    if (tokens.length % pageSize != 0) {
      throw new MisalignedKeyException("tokens", tokens.length, pageSize);
    }
    byte[][] hashes = chain(seed(namespace), tokens, 0, tokens.length / pageSize, pageSize);
    List<PageKey> keys = new ArrayList<>(hashes.length);
    for (byte[] h : hashes) {
      keys.add(PageKey.of(h));
    }
    return keys;
  }

  /** The hash the first page of a namespace chains to: none for namespace 0. */
  static byte[] seed(long namespace) {
    if (namespace == 0) {
      return null;
    }
    MessageDigest md = SCRATCH.get().md;
    for (int i = 0; i < 8; i++) {
      md.update((byte) (namespace >>> (8 * i)));
    }
    return md.digest();
  }

  /** Hashes {@code pages} pages of {@code tokens} from {@code offset}, chained to {@code prior}. */
  static byte[][] chain(byte[] prior, int[] tokens, int offset, int pages, int pageSize) {
    Scratch scratch = SCRATCH.get();
    byte[][] out = new byte[pages][];
    byte[] previous = prior;
    for (int p = 0; p < pages; p++) {
      previous = next(scratch, previous, tokens, offset + p * pageSize, pageSize);
      out[p] = previous;
    }
    return out;
  }

  /**
   * The hash of the page {@code tokens[base, base + pageSize)} chained to {@code previous} (null
   * for none), with the calling thread's digest.
   */
  static byte[] next(byte[] previous, int[] tokens, int base, int pageSize) {
    return next(SCRATCH.get(), previous, tokens, base, pageSize);
  }

  private static byte[] next(
      Scratch scratch, byte[] previous, int[] tokens, int base, int pageSize) {
    MessageDigest md = scratch.md;
    byte[] buffer = scratch.buffer(pageSize);
    if (previous != null) {
      md.update(previous);
    }
    for (int i = 0; i < pageSize; i++) {
      int t = tokens[base + i];
      buffer[4 * i] = (byte) t;
      buffer[4 * i + 1] = (byte) (t >>> 8);
      buffer[4 * i + 2] = (byte) (t >>> 16);
      buffer[4 * i + 3] = (byte) (t >>> 24);
    }
    md.update(buffer, 0, 4 * pageSize);
    return md.digest();
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JDK", e);
    }
  }

  /**
   * A tree node's chained page hashes, computing those of it and its ancestors not known yet
   * (a split divides them, so they stay known).
   */
  static byte[][] nodeHashes(RadixNode node, int pageSize) {
    if (node.pageHashes == null) {
      ArrayList<RadixNode> missing = new ArrayList<>();
      for (RadixNode n = node; n.parent != null && n.pageHashes == null; n = n.parent) {
        missing.add(n);
      }
      for (int i = missing.size() - 1; i >= 0; i--) {
        RadixNode n = missing.get(i);
        RadixNode p = n.parent;
        byte[] prior = p.parent == null ? seed(n.namespace) : p.pageHashes[p.pageHashes.length - 1];
        n.pageHashes = chain(prior, n.keyTokens, n.keyOffset, n.pageCount, pageSize);
      }
    }
    return node.pageHashes;
  }

  /** A tree node's page keys, one per page (computed now if not known; none for a root). */
  static List<PageKey> nodeKeys(RadixNode node, int pageSize) {
    if (node.parent != null) {
      nodeHashes(node, pageSize);
    }
    List<PageKey> keys = new ArrayList<>(node.pageCount);
    if (node.pageHashes != null) {
      for (byte[] h : node.pageHashes) {
        keys.add(PageKey.of(h));
      }
    }
    return keys;
  }
}
