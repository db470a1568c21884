package io.kvtier.core.cache;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The prefix match of a request's tokens (CACHE.md §2): checks the tokens, walks the tree,
 * and reads what is cached where from the walked path: the device prefix, the host hit below it,
 * and the pending load-backs the prefix waits for.
 *
 * <p>Design note (hot path): the tokens that matched are the tree's own and were checked when
 * they were inserted, so only the tokens past the match are checked, between the walk and its
 * changes ({@link TreeWalk#walk}, {@link TreeWalk#complete}), which keeps a bad request
 * from leaving any trace. With an admission, the page-aligned tokens past the match are copied
 * into the key store first and the copy is checked ({@link KeyCopy}): the prompt's cold part is
 * read once. The walk and the scan write into holders owned here and refilled by every match,
 * so a match allocates nothing unless it finds pending loads.
 */
final class PrefixMatcher {
  /**
   * What the last {@link #scan} found; one instance, refilled by every scan and read before the
   * next. Why not a record per scan: the JIT does not scalar-replace it in an admission, and it
   * was 6% of the bytes a replayed request allocated (docs/PERFORMANCE.md).
   */
  static final class Scan {
    RadixNode lastDevice;
    RadixNode lastHost;
    int hostLength;
    List<LoadBack> loads;

    /**
     * With snapshots (HYBRID.md §5): the deepest node of the device prefix with a device
     * snapshot, and the deepest node of the host hit with a committed host snapshot; null = none.
     */
    RadixNode usableDevice;

    RadixNode usableHost;

    /** The copy of the tokens past the match, until the admitted request takes it. */
    final KeyCopy copy = new KeyCopy();
  }

  private final CacheTree tree;
  private final int pageSize;
  private final int vocabSize;
  private final RuleVariants rules;
  private final boolean snapshots;
  private final TreeWalk walk;
  private final Scan lastScan = new Scan();

  PrefixMatcher(
      CacheTree tree, int pageSize, int vocabSize, RuleVariants rules, boolean snapshots) {
    this.snapshots = snapshots;
    this.tree = tree;
    this.pageSize = pageSize;
    this.vocabSize = vocabSize;
    this.rules = rules;
    this.walk = new TreeWalk(tree);
  }

  /** A match without a lock: touches and may split like every match; drops an unused root. */
  MatchResult match(long namespace, int[] tokens) {
    RadixNode root = rootFor(namespace, tokens, tokens.length);
    Scan scan = scan(root, tokens, tokens.length, false);
    restampWalkedPath();
    // A query in a namespace nothing was cached in must not leave an empty root behind.
    tree.maybeDropRoot(root);
    int usable = scan.lastHost.depth;
    if (snapshots) {
      usable =
          scan.usableHost != null
              ? scan.usableHost.depth
              : scan.usableDevice != null ? scan.usableDevice.depth : 0;
    }
    return new MatchResult(
        tree.pathDeviceSlots(scan.lastDevice),
        scan.lastDevice.depth,
        scan.hostLength,
        scan.lastDevice,
        scan.lastHost,
        scan.loads,
        usable);
  }

  /**
   * The namespace's root, made if missing once the tokens are checked (nothing can match in a new
   * namespace, so {@link #scan} would check them all anyway), so that a bad request leaves none.
   */
  RadixNode rootFor(long namespace, int[] tokens, int length) {
    RadixNode root = tree.rootFor(namespace, false);
    if (root == null) {
      checkTokens(tokens, 0, length);
      root = tree.rootFor(namespace, true);
    }
    return root;
  }

  /**
   * Matches {@code tokens[0, length)} and checks them: those past the match, before the walk changes anything,
   * so that a bad request leaves the tree as it was. With {@code copyKey} (an admission) the
   * page-aligned tokens past the match are copied into the key store first and the copy is
   * checked ({@link Scan#copy}).
   *
   * @throws InvalidTokenException if a token id is outside the vocabulary
   */
  Scan scan(RadixNode root, int[] tokens, int length, boolean copyKey) {
    int aligned = length - length % pageSize;
    TreeWalk walk = this.walk;
    int matched = walk.walk(root, tokens, 0, aligned);
    checkTokens(tokens, aligned, length);
    int[] copied =
        copyKey && matched < aligned ? tree.copyKey(lastScan.copy, tokens, matched, aligned) : null;
    if (copied == null) {
      checkTokens(tokens, matched, aligned);
    } else {
      // The check reads the copy, which the copy just brought into the cache.
      int offset = lastScan.copy.offset;
      if (!tokensValid(copied, offset, offset + aligned - matched)) {
        tree.releaseKey(lastScan.copy);
        checkTokens(tokens, matched, aligned);
      }
    }
    walk.complete();
    RadixNode[] path = walk.path;
    int pathLength = walk.pathLength;
    RadixNode lastDevice = root;
    RadixNode usableDevice = null;
    RadixNode usableHost = null;
    List<LoadBack> pending = List.of();
    int i = 0;
    for (; i < pathLength && path[i].resident(); i++) {
      lastDevice = path[i];
      if (snapshots && lastDevice.stateSlots != null) {
        usableDevice = lastDevice;
      }
      LoadBack load = lastDevice.pendingLoad;
      if (load != null && !pending.contains(load)) {
        if (pending.isEmpty()) {
          pending = new ArrayList<>(2);
        }
        pending.add(load);
      }
    }
    if (pending.size() > 1) {
      pending.sort(Comparator.comparingLong(LoadBack::sequence));
    }
    RadixNode lastHost = lastDevice;
    for (; i < pathLength && path[i].hostSlots != null; i++) {
      lastHost = path[i];
      if (snapshots
          && lastHost.hostStateSlots != null
          && lastHost.backupState == BackupState.COMMITTED) {
        usableHost = lastHost;
      }
    }
    Scan scan = lastScan;
    scan.lastDevice = lastDevice;
    scan.lastHost = lastHost;
    scan.hostLength = lastHost.depth - lastDevice.depth;
    scan.loads = pending;
    scan.usableDevice = usableDevice;
    scan.usableHost = usableHost;
    return scan;
  }

  /** The first-page key the last walk computed where it found no child; see {@link #missPos}. */
  long missKey() {
    return walk.missKey;
  }

  /** Where the last walk found no child (-1: it found one everywhere it looked). */
  int missPos() {
    return walk.missPos;
  }

  /** With the broken per-rank access clock: re-stamps the nodes the last walk touched. */
  void restampWalkedPath() {
    if (rules.accessClock != null) {
      for (int i = 0; i < walk.pathLength; i++) {
        stampFromRankClock(walk.path[i]);
      }
    }
  }

  /** With the broken per-rank access clock: re-stamps {@code deepest} and its ancestors. */
  void restamp(RadixNode deepest) {
    if (rules.accessClock != null) {
      for (RadixNode n = deepest; n != null && n.parent != null; n = n.parent) {
        stampFromRankClock(n);
      }
    }
  }

  private void stampFromRankClock(RadixNode n) {
    if (!n.deleted) {
      n.lastAccess = rules.accessClock.getAsLong();
      tree.changed.mark(n);
      tree.keyChanged(n);
    }
  }

  /**
   * Checks that every token of {@code tokens[from, to)} is in the vocabulary.
   *
   * @throws InvalidTokenException naming the first one that is not
   */
  void checkTokens(int[] tokens, int from, int to) {
    if (!tokensValid(tokens, from, to)) {
      for (int i = from; i < to; i++) {
        if (tokens[i] < 0 || tokens[i] >= vocabSize) {
          throw new InvalidTokenException(tokens[i], i, vocabSize);
        }
      }
    }
  }

  /** Whether every token of {@code tokens[from, to)} is in the vocabulary. */
  private boolean tokensValid(int[] tokens, int from, int to) {
    int last = vocabSize - 1;
    // An OR of t and (vocab-1-t) is negative iff some t is out of range; an OR reduction
    // vectorizes, a min/max pair or an early exit does not as well (docs/PERFORMANCE.md).
    int signs = 0;
    for (int i = from; i < to; i++) {
      int t = tokens[i];
      signs |= t | (last - t);
    }
    return signs >= 0;
  }
}
