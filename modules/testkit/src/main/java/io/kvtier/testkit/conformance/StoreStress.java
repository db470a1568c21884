package io.kvtier.testkit.conformance;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.PageKey;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Writers and readers on one store at once, for {@link
 * KvStoreFailureChecks#readersGetWholePagesUnderEvictionPressure}. Writers put runs of
 * consecutive keys of a universe several times the store's capacity, so puts keep evicting;
 * readers get runs and check every page returned against its key. A store that frees or reuses
 * a page's memory while a reader copies it hands that reader another page's bytes, which the
 * check sees. Each thread has its own host pool.
 */
final class StoreStress {

  private static final int MAX_FAILURES = 20;

  private final KvStore store;
  private final List<PageKey> universe;
  private final int iterations;
  private final Queue<String> failures = new ConcurrentLinkedQueue<>();
  private final AtomicLong pagesAsked = new AtomicLong();

  StoreStress(KvStore store, List<PageKey> universe, int iterations) {
    this.store = store;
    this.universe = universe;
    this.iterations = iterations;
  }

  /**
   * Runs one thread per host pool, the first half writers, the rest readers, and waits for all.
   *
   * @param hosts one pool of at least 3 pages per thread
   * @param seed the seed of every thread's draws
   * @throws InterruptedException if interrupted while waiting (the check's timeout)
   */
  void run(HostMemory[] hosts, long seed) throws InterruptedException {
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < hosts.length; t++) {
      boolean writer = t < hosts.length / 2;
      String name = (writer ? "writer-" : "reader-") + t;
      Random random = new Random(seed + 0x9E3779B97F4A7C15L * (t + 1));
      HostMemory host = hosts[t];
      threads.add(
          Thread.ofPlatform()
              .name("store-stress-" + name)
              .start(
                  () -> {
                    try {
                      start.await();
                      for (int i = 0; i < iterations && failures.size() < MAX_FAILURES; i++) {
                        if (writer) {
                          write(host, random, name, i);
                        } else {
                          read(host, random, name, i);
                        }
                      }
                    } catch (Throwable e) {
                      failures.add(name + " threw " + e);
                    }
                  }));
    }
    start.countDown();
    for (Thread thread : threads) {
      thread.join();
    }
  }

  /** What went wrong, one line each; empty if nothing. */
  List<String> failures() {
    return List.copyOf(failures);
  }

  /** Pages asked for by every reader's {@code get}s. */
  long pagesAsked() {
    return pagesAsked.get();
  }

  private List<PageKey> run(Random random) {
    int length = 1 + random.nextInt(3);
    int from = random.nextInt(universe.size() - length + 1);
    return universe.subList(from, from + length);
  }

  private void write(HostMemory host, Random random, String name, int iteration) {
    List<PageKey> keys = run(random);
    for (int i = 0; i < keys.size(); i++) {
      StorePages.fill(host, i, keys.get(i), 0);
    }
    int n = store.put(keys, host, StorePages.run(0, keys.size()));
    if (n < 0 || n > keys.size()) {
      failures.add(
          name + " iteration " + iteration + ": put of " + keys.size() + " pages returned " + n);
    }
  }

  private void read(HostMemory host, Random random, String name, int iteration) {
    List<PageKey> keys = run(random);
    for (int i = 0; i < keys.size(); i++) {
      StorePages.scribble(host, i);
    }
    int n = store.get(keys, host, StorePages.run(0, keys.size()));
    pagesAsked.addAndGet(keys.size());
    if (n < 0 || n > keys.size()) {
      failures.add(
          name + " iteration " + iteration + ": get of " + keys.size() + " pages returned " + n);
      return;
    }
    for (int i = 0; i < n; i++) {
      if (!StorePages.holds(host, i, keys.get(i), 0)) {
        failures.add(
            name
                + " iteration "
                + iteration
                + ": page "
                + i
                + " of "
                + n
                + " returned, "
                + keys.get(i)
                + ", holds bytes that are not that page's");
      }
    }
  }
}
