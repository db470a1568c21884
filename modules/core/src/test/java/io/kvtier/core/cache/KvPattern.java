package io.kvtier.core.cache;

import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageMemory;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Deterministic stand-in KV for tests: the bytes of a token's K and V vectors in a layer are
 * derived from (hash of the token's whole prefix and namespace, layer, position), so a page holds
 * the right bytes only if it was written for exactly that prefix. Written through {@link
 * PageMemory#write} after allocation and checked through {@link PageMemory#read}.
 */
final class KvPattern {
  private final KvLayout layout;

  KvPattern(KvLayout layout) {
    this.layout = layout;
  }

  /** The prefix hash after each token: {@code hashes[i]} covers {@code tokens[0..i]}. */
  static long[] prefixHashes(long namespace, int[] tokens, int length) {
    long[] out = new long[length];
    long h = 0x243F6A8885A308D3L ^ namespace * 0x9E3779B97F4A7C15L;
    for (int i = 0; i < length; i++) {
      h = (h ^ tokens[i]) * 0xBF58476D1CE4E5B9L;
      h ^= h >>> 29;
      h += i;
      out[i] = h;
    }
    return out;
  }

  private byte[] block(long[] hashes, int firstToken, int layer) {
    int pageSize = layout.pageSize();
    byte[] bytes = new byte[(int) layout.pageBytesPerLayer()];
    int vector = (int) layout.vectorBytes();
    for (int j = 0; j < pageSize; j++) {
      int pos = firstToken + j;
      if (pos >= hashes.length) {
        break;
      }
      int k = (int) layout.keyOffset(j);
      int v = (int) layout.valueOffset(j);
      for (int b = 0; b < vector; b++) {
        bytes[k + b] = value(hashes[pos], layer, pos, b);
        bytes[v + b] = value(hashes[pos], layer, pos, vector + b);
      }
    }
    return bytes;
  }

  private static byte value(long hash, int layer, int pos, int index) {
    long z = hash + layer * 0x632BE59BD9B4E019L + pos * 0x85EBCA77C2B2AE63L + index;
    z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
    return (byte) (z ^ (z >>> 29));
  }

  /** Writes the pattern of page {@code pageIndex} (tokens from {@code pageIndex*pageSize}). */
  void write(PageMemory memory, int slot, long[] hashes, int pageIndex) {
    for (int layer = 0; layer < layout.layers(); layer++) {
      memory.write(
          slot,
          layer,
          0,
          MemorySegment.ofArray(block(hashes, pageIndex * layout.pageSize(), layer)));
    }
  }

  /** Whether the slot holds the pattern of page {@code pageIndex} in every layer. */
  boolean matches(PageMemory memory, int slot, long[] hashes, int pageIndex) {
    return mismatchLayer(memory, slot, hashes, pageIndex) < 0;
  }

  /** The first layer whose bytes differ from the pattern, or -1. */
  int mismatchLayer(PageMemory memory, int slot, long[] hashes, int pageIndex) {
    for (int layer = 0; layer < layout.layers(); layer++) {
      byte[] actual = new byte[(int) layout.pageBytesPerLayer()];
      memory.read(slot, layer, 0, MemorySegment.ofArray(actual));
      if (!Arrays.equals(actual, block(hashes, pageIndex * layout.pageSize(), layer))) {
        return layer;
      }
    }
    return -1;
  }

  /** The tokens from the root to the end of a node. */
  static int[] pathTokens(RadixNode node) {
    int[] out = new int[node.depth];
    for (RadixNode n = node; n.parent != null; n = n.parent) {
      System.arraycopy(n.keyTokens, n.keyOffset, out, n.depth - n.keyLength, n.keyLength);
    }
    return out;
  }

  /**
   * Checks the device bytes of every resident, valid node whose load is not pending, and the
   * host bytes of every committed node.
   *
   * @return a description of the first wrong page, or null if all are right
   */
  String verifyTree(RankCache cache, PageMemory device, PageMemory host) {
    LongMap<RadixNode> roots = cache.rooms().tree().roots;
    for (int s = 0; s < roots.slotCount(); s++) {
      RadixNode root = roots.valueAt(s);
      if (root != null) {
        String bad = verifyBelow(root, device, host);
        if (bad != null) {
          return bad;
        }
      }
    }
    return null;
  }

  private String verifyBelow(RadixNode parent, PageMemory device, PageMemory host) {
    if (parent.children == null) {
      return null;
    }
    for (int s = 0; s < parent.children.slotCount(); s++) {
      for (RadixNode n = parent.children.valueAt(s); n != null; n = n.sameKeyNext) {
        String bad = verifyNode(n, device, host);
        if (bad == null) {
          bad = verifyBelow(n, device, host);
        }
        if (bad != null) {
          return bad;
        }
      }
    }
    return null;
  }

  String verifyNode(RadixNode n, PageMemory device, PageMemory host) {
    if (n.invalid != 0) {
      return null;
    }
    int[] tokens = pathTokens(n);
    long[] hashes = prefixHashes(n.namespace, tokens, tokens.length);
    int firstPage = (n.depth - n.keyLength) / layout.pageSize();
    for (int i = 0; i < n.pageCount; i++) {
      if (n.resident() && n.pendingLoad == null) {
        int slot = SlotRuns.slot(n.deviceRuns, n.deviceRuns.length, i);
        int layer = mismatchLayer(device, slot, hashes, firstPage + i);
        if (layer >= 0) {
          return "device slot "
              + slot
              + " (page "
              + i
              + " of "
              + n
              + ") layer "
              + layer
              + " does not hold its prefix's KV";
        }
      }
      if (n.backupState == BackupState.COMMITTED && host != null) {
        int slot = n.hostSlots[n.hostOffset + i];
        int layer = mismatchLayer(host, slot, hashes, firstPage + i);
        if (layer >= 0) {
          return "host slot "
              + slot
              + " (page "
              + i
              + " of "
              + n
              + ") layer "
              + layer
              + " does not hold its prefix's KV";
        }
      }
    }
    return null;
  }
}
