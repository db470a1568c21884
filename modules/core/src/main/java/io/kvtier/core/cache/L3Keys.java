package io.kvtier.core.cache;

import io.kvtier.spi.PageKey;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
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
 *   key  = salt XOR pageHash
 * </pre>
 *
 * <p>The key is the page hash itself, made distinct per salt by a fixed XOR: no digest beyond the
 * chain's one per page (a second SHA-256 per key was the largest cost of an L3 tier,
 * docs/PERFORMANCE.md, "One digest per L3 page"). For one salt it is a bijection of the page
 * hash, so two keys are equal exactly when two page hashes are (a SHA-256 collision: the
 * namespace, and with it the tenant, is inside the page hash). Across salts, two keys are equal
 * when two page hashes differ by the two salts' XOR, a fixed 256-bit difference between SHA-256
 * outputs, which no attack finds faster than the generic 2^128 of a collision. Keys of the
 * earlier form ({@code SHA-256(salt | pageHash)}, before 2026-12-05) are never asked for again: a
 * store written then keeps them as cold pages its own eviction removes.
 *
 * <p>For replicated KV (MLA) the rank is written as -1, so every rank computes the same keys.
 *
 * <p>A recurrent-state snapshot at a node's end (HYBRID.md §6) is {@code kvtier.snapshot-slots}
 * page slots; slot {@code i} is stored under
 *
 * <pre>
 *   snapshotKey = SHA-256(salt | pageHash(the last page before the end) | 0x02 | i)
 * </pre>
 *
 * with {@code i} as 4 bytes little-endian: 37 bytes after the salt, where a page key has 32, so
 * no snapshot key is a page key and the slots of one snapshot have keys of their own.
 */
public final class L3Keys {
  /**
   * One digest per thread, reused for every snapshot key it computes ({@code digest()} resets it):
   * the keys of a probe, put or fetch are computed one after another on the thread that runs the
   * store work, and {@code MessageDigest.getInstance} per key cost more than the hash itself
   * (docs/PERFORMANCE.md, "L3 keys").
   */
  private static final ThreadLocal<MessageDigest> DIGEST = ThreadLocal.withInitial(L3Keys::sha256);

  private static final VarHandle BIG_ENDIAN_LONG =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** The kind byte of snapshot keys (HYBRID.md §6; 0x01 is reserved for SWA pages). */
  private static final byte SNAPSHOT_KIND = 0x02;

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
    if (salt.length != 32 || pageHash.length != 32) {
      throw new IllegalArgumentException(
          "salt.length="
              + salt.length
              + " and pageHash.length="
              + pageHash.length
              + " must both be 32");
    }
    return new PageKey(
        word(salt, 0) ^ word(pageHash, 0),
        word(salt, 8) ^ word(pageHash, 8),
        word(salt, 16) ^ word(pageHash, 16),
        word(salt, 24) ^ word(pageHash, 24));
  }

  /** The big-endian 64-bit word at {@code at}, as {@link PageKey#of} reads it. */
  private static long word(byte[] bytes, int at) {
    return (long) BIG_ENDIAN_LONG.get(bytes, at);
  }

  /**
   * The L3 key of slot {@code slot} of the recurrent-state snapshot at the end of the page whose
   * chained hash is {@code pageHash}.
   *
   * @param salt from {@link #salt}
   * @param pageHash the 32-byte chained hash of the last page before the snapshot's position
   * @param slot the slot's index in the snapshot, at least 0
   * @return the key
   */
  public static PageKey snapshotKey(byte[] salt, byte[] pageHash, int slot) {
    if (slot < 0) {
      throw new IllegalArgumentException("slot=" + slot + " must be >= 0");
    }
    MessageDigest md = DIGEST.get();
    md.update(salt);
    md.update(pageHash);
    md.update(SNAPSHOT_KIND);
    md.update(intBytes(slot));
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
