package io.kvtier.core.cache;

import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.PageKey;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;

/**
 * Rank-local progress of this rank's L3 store work (ARCHITECTURE.md §4, right column): the store,
 * the executor and every {@link L3Job} it returned, the key salt, and the clock the prefetch
 * timeouts read. The replicated side sees it only as an {@link L3Sink}; its answers leave only
 * through {@link #readyPutPrefix()}, {@link #putFailures(int)} and {@link #prefetchProgress},
 * which the rank protocol reduces across ranks before they come back as commit arguments.
 */
final class L3Progress implements L3Sink {
  /** Pages per fetch step: how finely the ranks see a fetch's progress. */
  static final int FETCH_STEP_PAGES = 8;

  private final L3Setup setup;
  private final KvStore store;
  private final HostMemory host;
  private final byte[] salt;
  private final ArrayDeque<L3Job> puts = new ArrayDeque<>();
  private final LongMap<Local> prefetches = new LongMap<>(8);

  /** A prefetch's local handles. */
  private static final class Local {
    final long startNanos;
    final long timeoutNanos;
    ProbeWork probe;
    L3Job probeJob;
    FetchWork fetch;
    L3Job fetchJob;
    boolean cancelled;

    Local(long startNanos, long timeoutNanos) {
      this.startNanos = startNanos;
      this.timeoutNanos = timeoutNanos;
    }
  }

  L3Progress(L3Setup setup, HostMemory host) {
    this.setup = setup;
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
  public void put(byte[][] pageHashes, int[] hostSlots) {
    if (!setup.writer()) {
      // Replicated KV: rank 0 writes for everyone; this rank's entry only keeps the pairing.
      puts.addLast(DONE);
      return;
    }
    puts.addLast(setup.executor().submit(new PutWork(pageHashes, hostSlots)));
  }

  @Override
  public void committedPuts(int n) {
    for (int i = 0; i < n; i++) {
      puts.removeFirst();
    }
  }

  @Override
  public void probe(long sequence, byte[][] pageHashes, long timeoutNanos) {
    Local local = new Local(setup.time().nanoTime(), timeoutNanos);
    local.probe = new ProbeWork(pageHashes);
    local.probeJob = setup.executor().submit(local.probe);
    prefetches.put(sequence, local);
  }

  @Override
  public void fetch(long sequence, byte[][] pageHashes, int pages, int[] hostSlots) {
    Local local = prefetches.get(sequence);
    local.fetch = new FetchWork(pageHashes, pages, hostSlots);
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
   *   progress  PROBING: the pages found (-1 until the probe finished); FETCHING: the pages
   *             fetched, counted from the first; DRAINING: 0
   *   gave up   -1 if this rank's timeout has passed (policy timeout), else 0
   *   finished  1 if this rank's current work has stopped for good, else 0
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
      boolean gaveUp = timeouts && now - local.startNanos >= local.timeoutNanos;
      switch (op.state) {
        case PROBING -> {
          boolean finished = local.probeJob.finished();
          into[at] =
              finished && local.probeJob.stepsDone() == 1 ? local.probe.hits : finished ? 0 : -1;
          into[at + 1] = gaveUp ? -1 : 0;
          into[at + 2] = finished ? 1 : 0;
        }
        case FETCHING -> {
          boolean finished = local.fetchJob.finished();
          int fetched =
              finished
                  ? local.fetch.loaded
                  : Math.min(op.reservedPages, local.fetchJob.stepsDone() * FETCH_STEP_PAGES);
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

  /** One put of a chain's pages. */
  private final class PutWork implements L3Work {
    private final byte[][] hashes;
    private final int[] slots;

    PutWork(byte[][] hashes, int[] slots) {
      this.hashes = hashes;
      this.slots = slots;
    }

    @Override
    public int steps() {
      return 1;
    }

    @Override
    public boolean step(int index) {
      return store.put(keys(hashes, 0, hashes.length), host, slots) == hashes.length;
    }
  }

  /** One existence probe of the candidate pages. */
  private final class ProbeWork implements L3Work {
    private final byte[][] hashes;
    volatile int hits;

    ProbeWork(byte[][] hashes) {
      this.hashes = hashes;
    }

    @Override
    public int steps() {
      return 1;
    }

    @Override
    public boolean step(int index) {
      int n = store.existsPrefix(keys(hashes, 0, hashes.length));
      hits = Math.max(0, Math.min(n, hashes.length));
      return true;
    }
  }

  /** A fetch in steps of {@link #FETCH_STEP_PAGES} pages, stopping at the first miss. */
  private final class FetchWork implements L3Work {
    private final byte[][] hashes;
    private final int pages;
    private final int[] slots;

    /** Pages loaded, counted from the first; final once the job is finished. */
    volatile int loaded;

    FetchWork(byte[][] hashes, int pages, int[] slots) {
      this.hashes = hashes;
      this.pages = pages;
      this.slots = slots;
    }

    @Override
    public int steps() {
      return (pages + FETCH_STEP_PAGES - 1) / FETCH_STEP_PAGES;
    }

    @Override
    public boolean step(int index) {
      int from = index * FETCH_STEP_PAGES;
      int to = Math.min(pages, from + FETCH_STEP_PAGES);
      int n = store.get(keys(hashes, from, to), host, Arrays.copyOfRange(slots, from, to));
      n = Math.max(0, Math.min(n, to - from));
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
