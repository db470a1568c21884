package io.kvtier.core.cache;

import io.kvtier.spi.PageKey;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Objects;

/**
 * The L3 keys of pages (CACHE.md §12): the tree's chained page hash (which already covers the
 * namespace and every token of the prefix) salted per model and, for sharded KV, per rank and
 * world size, so that each rank stores its own shard and two models or two tensor-parallel
 * layouts never read each other's pages.
 *
 * <pre>
 *   salt = SHA-256("kvtier-l3" | modelId (UTF-8, length-prefixed) | rank | worldSize)
 *   key  = SHA-256(salt | pageHash)
 * </pre>
 *
 * <p>For replicated KV (MLA) the rank is written as -1, so every rank computes the same keys.
 */
public final class L3Keys {
  /**
   * One digest per thread, reused for every key it computes ({@code digest()} resets it): the
   * keys of a probe, put or fetch are computed one after another on the thread that runs the
   * store work, and {@code MessageDigest.getInstance} per key cost more than the hash itself
   * (docs/PERFORMANCE.md, "L3 keys").
   */
  private static final ThreadLocal<MessageDigest> DIGEST = ThreadLocal.withInitial(L3Keys::sha256);

  private L3Keys() {}

  /**
   * The salt of one rank's keys.
   *
   * @param modelId the model's identity, not blank
   * @param rank the rank, at least 0 (ignored when {@code replicatedKv})
   * @param worldSize ranks in the group, above {@code rank}
   * @param replicatedKv whether every rank holds the same KV
   * @return 32 bytes
   */
  public static byte[] salt(String modelId, int rank, int worldSize, boolean replicatedKv) {
    Objects.requireNonNull(modelId, "modelId");
    if (rank < 0 || rank >= worldSize) {
      throw new IllegalArgumentException(
          "rank=" + rank + " must be in [0, worldSize=" + worldSize + ")");
    }
    MessageDigest md = sha256();
    md.update("kvtier-l3".getBytes(StandardCharsets.US_ASCII));
    byte[] model = modelId.getBytes(StandardCharsets.UTF_8);
    md.update(intBytes(model.length));
    md.update(model);
    md.update(intBytes(replicatedKv ? -1 : rank));
    md.update(intBytes(worldSize));
    return md.digest();
  }

  /**
   * The L3 key of one page.
   *
   * @param salt from {@link #salt}
   * @param pageHash the page's 32-byte chained hash from the tree
   * @return the key
   */
  public static PageKey key(byte[] salt, byte[] pageHash) {
    MessageDigest md = DIGEST.get();
    md.update(salt);
    md.update(pageHash);
    return PageKey.of(md.digest());
  }

  private static byte[] intBytes(int v) {
    return new byte[] {(byte) v, (byte) (v >>> 8), (byte) (v >>> 16), (byte) (v >>> 24)};
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JDK", e);
    }
  }
}
