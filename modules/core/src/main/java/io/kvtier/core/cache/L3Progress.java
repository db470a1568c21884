package io.kvtier.core.cache;

import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.TransferFailedException;
import java.util.AbstractList;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Objects;

/**
 * Rank-local progress of this rank's L3 store work (ARCHITECTURE.md §4, right column): the store,
 * the executor and every {@link L3Job} it returned, the key salt, and the clock the prefetch
 * timeouts read. The replicated side sees it only as an {@link L3Sink}; its answers leave only
 * through {@link #readyPutPrefix()}, {@link #putFailures(int)} and {@link #prefetchProgress},
 * which the rank protocol reduces across ranks before they come back as commit arguments.
 */
final class L3Progress implements L3Sink {
  private static final System.Logger LOG = System.getLogger(L3Progress.class.getName());

  /** Pages per fetch step: how finely the ranks see a fetch's progress. */
  static final int FETCH_STEP_PAGES = 8;

  private final L3Setup setup;
  private final KvStore store;
  private final HostMemory host;

  /**
   * The host blocks' sums: taken on what a fetch writes, checked on what a put reads; null for a
   * host pool without bytes.
   */
  private final HostChecksums sums;

  private final byte[] salt;
  private final ArrayDeque<L3Job> puts = new ArrayDeque<>();
  private final LongMap<Local> prefetches = new LongMap<>(8);

  /** A prefetch's local handles. */
  private static final class Local {
    final long startNanos;
    final long timeoutNanos;
    final Candidates candidates;
    ProbeWork probe;
    L3Job probeJob;
    FetchWork fetch;
    L3Job fetchJob;
    boolean cancelled;

    Local(long startNanos, long timeoutNanos, Candidates candidates) {
      this.startNanos = startNanos;
      this.timeoutNanos = timeoutNanos;
      this.candidates = candidates;
    }
  }

  L3Progress(L3Setup setup, HostMemory host, HostChecksums sums) {
    this.setup = setup;
    this.sums = sums;
    this.store = setup.store();
    this.host = host;
    this.salt =
        L3Keys.salt(
            setup.config().modelId(),
            setup.rank(),
            setup.worldSize(),
            setup.config().replicatedKv());
  }

  // ---------------------------------------------------------------- in: the sink

  @Override
  public void put(
      byte[][] pageHashes, int[] hostSlots, byte[][] snapshotHashes, int[] snapshotSlots) {
    if (!setup.writer()) {
      // Replicated KV: rank 0 writes for everyone; this rank's entry only keeps the pairing.
      puts.addLast(DONE);
      return;
    }
    puts.addLast(
        setup.executor().submit(new PutWork(pageHashes, hostSlots, snapshotHashes, snapshotSlots)));
  }

  @Override
  public void committedPuts(int n) {
    for (int i = 0; i < n; i++) {
      puts.removeFirst();
    }
  }

  @Override
  public void probe(
      long sequence, CandidatePages candidates, int snapshotSlots, long timeoutNanos) {
    Local local =
        new Local(setup.time().nanoTime(), timeoutNanos, new Candidates(candidates, salt));
    local.probe = new ProbeWork(local.candidates, candidates.pages(), snapshotSlots, -1);
    local.probeJob = setup.executor().submit(local.probe);
    prefetches.put(sequence, local);
  }

  @Override
  public void reprobe(long sequence, int bound) {
    Local local = prefetches.get(sequence);
    ProbeWork last = local.probe;
    // The page prefix is what the first probe found (a failed probe found none): only the
    // snapshot keys are asked again.
    int pageHits = local.probeJob.stepsDone() == 1 ? last.pageHits : 0;
    local.probe = new ProbeWork(local.candidates, bound, last.snapshotSlots, pageHits);
    local.probeJob = setup.executor().submit(local.probe);
  }

  @Override
  public void fetch(long sequence, int pages, int[] hostSlots, int snapshotSlots) {
    Local local = prefetches.get(sequence);
    local.fetch = new FetchWork(local.candidates, pages, hostSlots, snapshotSlots);
    local.fetchJob = setup.executor().submit(local.fetch);
  }

  @Override
  public void cancel(long sequence) {
    Local local = prefetches.get(sequence);
    local.cancelled = true;
    if (local.probeJob != null) {
      local.probeJob.cancel();
    }
    if (local.fetchJob != null) {
      local.fetchJob.cancel();
    }
  }

  @Override
  public void forget(long sequence) {
    Local local = prefetches.remove(sequence);
    if (local != null && !local.cancelled) {
      cancel(local);
    }
  }

  private static void cancel(Local local) {
    if (local.probeJob != null) {
      local.probeJob.cancel();
    }
    if (local.fetchJob != null) {
      local.fetchJob.cancel();
    }
  }

  // ---------------------------------------------------------------- out: for agreement

  /** Puts from the FIFO head that have finished on this rank (succeeded or failed). */
  int readyPutPrefix() {
    int ready = 0;
    for (L3Job job : puts) {
      if (!job.finished()) {
        break;
      }
      ready++;
    }
    return ready;
  }

  /** Which of the first {@code n} puts failed on this rank. */
  BitSet putFailures(int n) {
    if (n < 0 || n > puts.size()) {
      throw new IllegalArgumentException(
          "cannot report failures of "
              + n
              + " L3 writes: "
              + puts.size()
              + " are pending; pass 0.."
              + puts.size());
    }
    BitSet failed = new BitSet();
    int i = 0;
    for (L3Job job : puts) {
      if (i == n) {
        break;
      }
      if (!job.finished()) {
        throw new IllegalStateException(
            "L3 write "
                + i
                + " has not finished on this rank: pass"
                + " at most readyL3WritePrefix() writes");
      }
      if (job.stepsDone() < 1) {
        failed.set(i);
      }
      i++;
    }
    return failed;
  }

  /**
   * Writes three values per pending prefetch, in the replicated order of {@code ops}:
   *
   * <pre>
   *   progress  PROBING: the pages found (-1 until the probe finished); with snapshots the
   *             deepest end (pages) at most the op's probe bound whose pages and snapshot are
   *             found, 0 if none; FETCHING: the pages fetched, counted from the first, plus 1
   *             once the snapshot is in too (with snapshots); DRAINING: 0
   *   gave up   -1 if this rank's timeout has passed (policy timeout), else 0
   *   finished  1 if this rank's current work has stopped for good, else 0; PROBING with
   *             snapshots: 1 + bound - end once finished, so that its MIN gives the MAX end
   * </pre>
   *
   * A MIN reduction of these gives the pages every rank has, whether any rank gave up (the MAX
   * of the flag, as a MIN of its negation) and whether every rank's work stopped.
   */
  void prefetchProgress(List<Prefetch> ops, long[] into, int offset) {
    long now = setup.time().nanoTime();
    boolean timeouts = setup.config().prefetchPolicy() == L3PrefetchPolicy.TIMEOUT;
    for (int i = 0; i < ops.size(); i++) {
      Prefetch op = ops.get(i);
      Local local = prefetches.get(op.sequence);
      int at = offset + 3 * i;
      boolean gaveUp =
          (timeouts || op.awaitTransfer) && now - local.startNanos >= local.timeoutNanos;
      switch (op.state) {
        case PROBING -> {
          boolean finished = local.probeJob.finished();
          int hits = finished && local.probeJob.stepsDone() == 1 ? local.probe.hits : 0;
          into[at] = finished ? hits : -1;
          into[at + 1] = gaveUp ? -1 : 0;
          into[at + 2] = !finished ? 0 : op.snapshotSlots > 0 ? 1L + op.probeBound - hits : 1;
        }
        case FETCHING -> {
          boolean finished = local.fetchJob.finished();
          int fetched = finished ? local.fetch.units() : local.fetch.unitsOf(local.fetchJob);
          into[at] = fetched;
          into[at + 1] = gaveUp ? -1 : 0;
          into[at + 2] = finished ? 1 : 0;
        }
        case DRAINING -> {
          into[at] = 0;
          into[at + 1] = 0;
          into[at + 2] = local.fetchJob == null || local.fetchJob.finished() ? 1 : 0;
        }
        default -> throw new IllegalStateException(op + " is not pending");
      }
    }
  }

  // ---------------------------------------------------------------- for the invariant checker

  int putGroups() {
    return puts.size();
  }

  int prefetchGroups() {
    return prefetches.size();
  }

  // ---------------------------------------------------------------- the works

  private List<PageKey> keys(byte[][] hashes, int from, int to) {
    List<PageKey> keys = new ArrayList<>(to - from);
    for (int i = from; i < to; i++) {
      keys.add(L3Keys.key(salt, hashes[i]));
    }
    return keys;
  }

  /** The keys of the {@code slots} slots of the snapshot at the end of the page {@code hash}. */
  private List<PageKey> snapshotKeys(byte[] hash, int slots) {
    List<PageKey> keys = new ArrayList<>(slots);
    for (int i = 0; i < slots; i++) {
      keys.add(L3Keys.snapshotKey(salt, hash, i));
    }
    return keys;
  }

  /**
   * A prefetch's candidate pages on this rank: each page's L3 key computed when a work first asks
   * for it, from the page's chained hash ({@link CandidatePages}, which the fetched pages' tree
   * nodes take too), and kept for the next (CACHE.md §12). A probe computes them only as far as
   * the store looks (to the first miss), a reprobe and the fetch reuse them. Synchronized, since a
   * store may read a key list on a thread of its own; the works themselves run one at a time.
   */
  static final class Candidates {
    private final CandidatePages pages;
    private final byte[] salt;
    private final PageKey[] keys;

    Candidates(CandidatePages pages, byte[] salt) {
      this.pages = pages;
      this.salt = salt;
      this.keys = new PageKey[pages.pages()];
    }

    /** Candidate page {@code i}'s chained hash ({@link CandidatePages#hash}). */
    byte[] hash(int i) {
      return pages.hash(i);
    }

    /** Candidate page {@code i}'s L3 key, computed once. */
    synchronized PageKey key(int i) {
      PageKey key = keys[Objects.checkIndex(i, keys.length)];
      if (key == null) {
        key = L3Keys.key(salt, hash(i));
        keys[i] = key;
      }
      return key;
    }

    /** The keys of pages {@code [from, to)}, each computed when the list's reader gets it. */
    List<PageKey> keys(int from, int to) {
      Objects.checkFromToIndex(from, to, keys.length);
      return new AbstractList<>() {
        @Override
        public PageKey get(int index) {
          return key(from + Objects.checkIndex(index, to - from));
        }

        @Override
        public int size() {
          return to - from;
        }
      };
    }

    /** Pages hashed so far (for tests). */
    int hashed() {
      return pages.hashed();
    }
  }

  /** One put of a chain's pages and the snapshots at the ends of some of them. */
  private final class PutWork implements L3Work {
    private final byte[][] hashes;
    private final int[] slots;
    private final byte[][] snapshots;
    private final int perSnapshot;

    PutWork(byte[][] pageHashes, int[] pageSlots, byte[][] snapshotHashes, int[] snapshotSlots) {
      this.hashes = pageHashes;
      this.snapshots = snapshotHashes;
      if (snapshotHashes.length == 0) {
        this.perSnapshot = 0;
        this.slots = pageSlots;
      } else {
        this.perSnapshot = snapshotSlots.length / snapshotHashes.length;
        this.slots = Arrays.copyOf(pageSlots, pageSlots.length + snapshotSlots.length);
        System.arraycopy(snapshotSlots, 0, slots, pageSlots.length, snapshotSlots.length);
      }
    }

    @Override
    public int steps() {
      return 1;
    }

    @Override
    public boolean step(int index) {
      List<PageKey> keys = keys(hashes, 0, hashes.length);
      for (byte[] h : snapshots) {
        keys.addAll(snapshotKeys(h, perSnapshot));
      }
      // A host page whose bytes changed since its backup must not reach the store: the write
      // fails (and is counted) like one the store refused.
      try {
        if (sums != null) {
          sums.verifyPages(slots);
        }
      } catch (TransferFailedException e) {
        LOG.log(System.Logger.Level.WARNING, e.getMessage());
        return false;
      }
      return store.put(keys, host, slots) == keys.size();
    }
  }

  /**
   * One existence probe of the candidate pages; with snapshots, then of the snapshots at the
   * candidate ends from the deepest found (at most {@code bound}) down, until one is present.
   */
  private final class ProbeWork implements L3Work {
    final Candidates candidates;
    final int bound;
    final int snapshotSlots;

    /** The pages found by an earlier probe of the same prefetch, or -1 to ask the store. */
    private final int knownPageHits;

    /** The present page prefix; final once the job is finished. */
    volatile int pageHits;

    /** The pages found, or with snapshots the deepest end with its snapshot (0 if none). */
    volatile int hits;

    ProbeWork(Candidates candidates, int bound, int snapshotSlots, int knownPageHits) {
      this.candidates = candidates;
      this.bound = bound;
      this.snapshotSlots = snapshotSlots;
      this.knownPageHits = knownPageHits;
    }

    @Override
    public int steps() {
      return 1;
    }

    @Override
    public boolean step(int index) {
      int n =
          knownPageHits >= 0
              ? knownPageHits
              : Math.max(0, Math.min(store.existsPrefix(candidates.keys(0, bound)), bound));
      pageHits = n;
      if (snapshotSlots == 0) {
        hits = n;
        return true;
      }
      int end = Math.min(n, bound);
      while (end > 0
          && store.existsPrefix(snapshotKeys(candidates.hash(end - 1), snapshotSlots))
              < snapshotSlots) {
        end--;
      }
      hits = end;
      return true;
    }
  }

  /**
   * A fetch in steps of {@link #FETCH_STEP_PAGES} pages, stopping at the first miss; with
   * snapshots, one more step fetches the snapshot at the end of the last page.
   */
  private final class FetchWork implements L3Work {
    private final Candidates candidates;
    private final int pages;
    private final int[] slots;
    private final int snapshotSlots;
    private final int pageSteps;

    /** Pages loaded, counted from the first; final once the job is finished. */
    volatile int loaded;

    /** Whether the snapshot is loaded; final once the job is finished. */
    volatile boolean snapshotLoaded;

    FetchWork(Candidates candidates, int pages, int[] slots, int snapshotSlots) {
      this.candidates = candidates;
      this.pages = pages;
      this.slots = slots;
      this.snapshotSlots = snapshotSlots;
      this.pageSteps = (pages + FETCH_STEP_PAGES - 1) / FETCH_STEP_PAGES;
    }

    /** The units fetched once finished: pages, plus 1 for the snapshot. */
    int units() {
      return loaded + (snapshotLoaded ? 1 : 0);
    }

    /** The units a job still running has fetched, by its steps done. */
    int unitsOf(L3Job job) {
      int done = job.stepsDone();
      return Math.min(pages, Math.min(done, pageSteps) * FETCH_STEP_PAGES)
          + (done > pageSteps ? 1 : 0);
    }

    @Override
    public int steps() {
      return pageSteps + (snapshotSlots > 0 ? 1 : 0);
    }

    @Override
    public boolean step(int index) {
      if (index == pageSteps) {
        int n =
            store.get(
                snapshotKeys(candidates.hash(pages - 1), snapshotSlots),
                host,
                Arrays.copyOfRange(slots, pages, pages + snapshotSlots));
        snapshotLoaded = n == snapshotSlots;
        if (snapshotLoaded && sums != null) {
          sums.recordPages(slots, pages, pages + snapshotSlots);
        }
        return snapshotLoaded;
      }
      int from = index * FETCH_STEP_PAGES;
      int to = Math.min(pages, from + FETCH_STEP_PAGES);
      int n = store.get(candidates.keys(from, to), host, Arrays.copyOfRange(slots, from, to));
      n = Math.max(0, Math.min(n, to - from));
      if (sums != null) {
        sums.recordPages(slots, from, from + n);
      }
      loaded = from + n;
      return n == to - from;
    }
  }

  /** The finished job of a put this rank does not make. */
  private static final L3Job DONE =
      new L3Job() {
        @Override
        public int stepsDone() {
          return 1;
        }

        @Override
        public boolean finished() {
          return true;
        }

        @Override
        public void cancel() {}
      };
}
