package io.kvtier.bench;

import io.kvtier.core.cache.L3Keys;
import io.kvtier.core.cache.PageHasher;
import io.kvtier.spi.PageKey;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The floor under an L3 tier's cost per page written: the page's chained SHA-256 ({@link
 * PageHasher}, 32 bytes of the previous page's hash and 16 token ids) and its L3 key ({@link
 * L3Keys#key}, the 32-byte salt XOR the page's hash since 2026-12-05; a second SHA-256 before),
 * per page. {@code kvtier replay} writes millions of pages to its L3 tier while the rest of a
 * page's replay costs tens of nanoseconds, so these two figures bound how close a replay with an
 * L3 tier can come to one without (docs/PERFORMANCE.md, "L3 keys once" and "One digest per L3
 * page").
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
// JMH 1.37 reads field offsets through sun.misc.Unsafe, which JDK 24+ warns about on every fork
@Fork(value = 1, jvmArgsAppend = "--sun-misc-unsafe-memory-access=allow")
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class L3KeyFloorBenchmark {
  private static final int PAGE = 16;
  private static final int PAGES = 64;

  private int[] tokens;
  private byte[] salt;
  private byte[][] hashes;

  /** Creates the benchmark; JMH instantiates it. */
  public L3KeyFloorBenchmark() {}

  /** A sequence of {@code PAGES} pages of random token ids, and its page hashes. */
  @Setup(Level.Trial)
  public void prepare() {
    SplittableRandom random = new SplittableRandom(1);
    tokens = new int[PAGE * PAGES];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = random.nextInt(128_256);
    }
    salt = L3Keys.salt("bench-model", 0, 1, false);
    List<PageKey> keys = PageHasher.pageKeys(0, tokens, PAGE);
    hashes = new byte[PAGES][];
    for (int p = 0; p < PAGES; p++) {
      hashes[p] = keys.get(p).toBytes();
    }
  }

  /**
   * The chained hashes of the sequence's pages, reported per page.
   *
   * @return the keys, for the blackhole
   */
  @Benchmark
  @OperationsPerInvocation(PAGES)
  public List<PageKey> chainHashPerPage() {
    return PageHasher.pageKeys(0, tokens, PAGE);
  }

  /**
   * The L3 keys of the sequence's pages from their known hashes, reported per page.
   *
   * @return the last key, for the blackhole
   */
  @Benchmark
  @OperationsPerInvocation(PAGES)
  public PageKey l3KeyPerPage() {
    PageKey last = null;
    for (byte[] h : hashes) {
      last = L3Keys.key(salt, h);
    }
    return last;
  }
}
