package io.kvtier.route;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The router's global prefix index: which replica holds which block in which medium, learned
 * from the replicas' KV events. Block hashes chain (a block's hash covers its parent's, so one
 * hash names the whole prefix up to its block), so the index is a radix tree whose edges are
 * block hashes, flattened into one map: walking a prompt's block hashes in order and stopping at
 * the first one a replica lacks is the walk from the root. Thread-safe: event threads write,
 * request threads read.
 */
public final class PrefixIndex {
  /** The media the score distinguishes; an L3 store's name counts as {@link #OTHER}. */
  public static final int GPU = 0;

  /** Host memory. */
  public static final int CPU = 1;

  /** Any other medium (an L3 store). */
  public static final int OTHER = 2;

  private static final int MEDIA = 3;

  /** Predicted blocks kept per replica at most (the oldest go first). */
  static final int MAX_PREDICTED = 65_536;

  private final int replicas;
  // block hash -> per medium, the bit set of replicas that hold it
  private final Map<Long, long[]> holders = new HashMap<>();
  // per replica, per medium, the hashes it holds (to forget a replica)
  private final List<List<Set<Long>>> held = new ArrayList<>();
  // per replica, hash -> when the prediction expires (System.nanoTime), oldest first: blocks of
  // prompts the router sent there whose events have not come yet
  private final List<LinkedHashMap<Long, Long>> predicted = new ArrayList<>();

  /**
   * An empty index.
   *
   * @param replicas how many replicas, 1 to 64
   */
  public PrefixIndex(int replicas) {
    if (replicas < 1 || replicas > 64) {
      throw new IllegalArgumentException("replicas=" + replicas + " must be 1 to 64");
    }
    this.replicas = replicas;
    for (int r = 0; r < replicas; r++) {
      List<Set<Long>> media = new ArrayList<>();
      for (int m = 0; m < MEDIA; m++) {
        media.add(new HashSet<>());
      }
      held.add(media);
      predicted.add(new LinkedHashMap<>());
    }
  }

  /** The medium index of a wire name. */
  static int medium(String name) {
    return switch (name) {
      case "GPU" -> GPU;
      case "CPU" -> CPU;
      default -> OTHER;
    };
  }

  /**
   * The router sent a prompt with these blocks to a replica: until the replica's events say
   * what it did with them (or {@code expiresAt}), {@link #match} counts them as on its device.
   * Why: events come after the prefill, and a request for the same prefix routed meanwhile
   * (concurrent clients of one document, the next turn of a chat sent right after the last)
   * would otherwise see no overlap anywhere and go by load, computing the prefix twice. Blocks
   * the replica is known to hold are not predicted: its events stay the truth for them.
   *
   * @param replica the replica
   * @param hashes the prompt's block hashes
   * @param expiresAt when the prediction lapses, in {@link System#nanoTime()}
   */
  public synchronized void routed(int replica, long[] hashes, long expiresAt) {
    LinkedHashMap<Long, Long> p = predicted.get(replica);
    List<Set<Long>> known = held.get(replica);
    for (long h : hashes) {
      if (!known.get(GPU).contains(h) && !known.get(CPU).contains(h)) {
        p.remove(h);
        p.put(h, expiresAt);
      }
    }
    long now = System.nanoTime();
    for (var it = p.values().iterator(); it.hasNext(); ) {
      long expiry = it.next();
      if (p.size() <= MAX_PREDICTED && expiry - now > 0) {
        break;
      }
      it.remove();
    }
  }

  /** The replica refused the prompt: its blocks are not predicted there any more. */
  public synchronized void unrouted(int replica, long[] hashes) {
    for (long h : hashes) {
      predicted.get(replica).remove(h);
    }
  }

  /** Predicted blocks of a replica not yet confirmed, expired or dropped. */
  public synchronized int predicted(int replica) {
    return predicted.get(replica).size();
  }

  /** A replica now holds these blocks in {@code medium}. */
  public synchronized void stored(int replica, String medium, long[] hashes) {
    int m = medium(medium);
    for (long h : hashes) {
      predicted.get(replica).remove(h);
      holders.computeIfAbsent(h, k -> new long[MEDIA])[m] |= 1L << replica;
      held.get(replica).get(m).add(h);
    }
  }

  /** A replica no longer holds these blocks in {@code medium}. */
  public synchronized void removed(int replica, String medium, long[] hashes) {
    int m = medium(medium);
    for (long h : hashes) {
      predicted.get(replica).remove(h);
      drop(replica, m, h);
      held.get(replica).get(m).remove(h);
    }
  }

  /** Forgets everything a replica holds (AllBlocksCleared, an unfilled gap, a failure). */
  public synchronized void clear(int replica) {
    predicted.get(replica).clear();
    for (int m = 0; m < MEDIA; m++) {
      Set<Long> set = held.get(replica).get(m);
      for (long h : set) {
        drop(replica, m, h);
      }
      set.clear();
    }
  }

  private void drop(int replica, int m, long h) {
    long[] masks = holders.get(h);
    if (masks == null) {
      return;
    }
    masks[m] &= ~(1L << replica);
    if (masks[GPU] == 0 && masks[CPU] == 0 && masks[OTHER] == 0) {
      holders.remove(h);
    }
  }

  /** Blocks a replica holds in a medium. */
  public synchronized int size(int replica, int medium) {
    return held.get(replica).get(medium).size();
  }

  /**
   * For each replica, how far the prompt's blocks are cached: {@code [r][GPU]} leading blocks on
   * its device (or predicted there, see {@link #routed}), {@code [r][CPU]} the leading blocks
   * after those that it holds on the host.
   *
   * @param hashes the prompt's block hashes, first to last
   * @return per replica, {GPU blocks, CPU blocks after them}
   */
  public synchronized int[][] match(long[] hashes) {
    int[][] out = new int[replicas][2];
    long onDevice = -1L >>> (64 - replicas);
    long cached = onDevice;
    long now = System.nanoTime();
    for (long h : hashes) {
      long[] masks = holders.get(h);
      long gpu = masks == null ? 0 : masks[GPU];
      for (int r = 0; r < replicas; r++) {
        Long expiry = predicted.get(r).get(h);
        if (expiry != null && expiry - now > 0) {
          gpu |= 1L << r;
        }
      }
      long any = gpu | (masks == null ? 0 : masks[CPU]);
      onDevice &= gpu;
      cached &= any;
      if (cached == 0) {
        break;
      }
      for (int r = 0; r < replicas; r++) {
        if ((onDevice & (1L << r)) != 0) {
          out[r][0]++;
        } else if ((cached & (1L << r)) != 0) {
          out[r][1]++;
        }
      }
    }
    return out;
  }
}
