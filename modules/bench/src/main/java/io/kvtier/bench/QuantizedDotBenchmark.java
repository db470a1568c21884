package io.kvtier.bench;

import io.kvtier.gguf.GgufTensorType;
import io.kvtier.model.llama.Kernels;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One weight row's dot product per quantized type, on one thread: {@link Kernels#dot} (a decode
 * step's product) and {@link Kernels#dot4} (four positions of a prefill), per row of 1,536
 * weights (smollm-135m's feed-forward width, whole blocks of every type). With {@code -prof gc}
 * it also shows what a dot allocates, which must be nothing: a kernel whose vectors the compiler
 * boxed ran at a quarter of its speed (docs/PERFORMANCE.md, "Quantized kernels without boxing").
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
// JMH 1.37 reads field offsets through sun.misc.Unsafe, which JDK 24+ warns about on every fork
@Fork(
    value = 1,
    jvmArgsAppend = {
      "--sun-misc-unsafe-memory-access=allow",
      "--add-modules",
      "jdk.incubator.vector"
    })
// five warm-up seconds: the four-position kernels reach their steady speed in three to five
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
public class QuantizedDotBenchmark {
  private static final int ROWS = 256;
  private static final int COLUMNS = 1536;

  /** The weights' type. */
  @Param({
    "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL",
    "IQ4_XS"
  })
  public String type;

  private GgufTensorType tensorType;
  private Arena arena;
  private MemorySegment weights;
  private long rowBytes;
  private float[] x;
  private float[] out;

  /** Creates the benchmark; JMH instantiates it. */
  public QuantizedDotBenchmark() {}

  /** {@code ROWS} rows of random weights in {@link #type}, and four random inputs. */
  @Setup(Level.Trial)
  public void prepare() {
    tensorType = GgufTensorType.valueOf(type);
    SplittableRandom random = new SplittableRandom(1);
    float[] w = new float[ROWS * COLUMNS];
    for (int i = 0; i < w.length; i++) {
      w[i] = (float) (random.nextDouble() * 2 - 1);
    }
    arena = Arena.ofShared();
    weights = arena.allocate(tensorType.bytesFor(w.length));
    tensorType.quantize(w, 0, w.length, weights, 0);
    rowBytes = tensorType.bytesFor(COLUMNS);
    x = new float[4 * COLUMNS];
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) (random.nextDouble() * 2 - 1);
    }
    out = new float[4];
  }

  /** Frees the weights. */
  @TearDown(Level.Trial)
  public void close() {
    arena.close();
  }

  /** One position against each row: ns per row. */
  @Benchmark
  @OperationsPerInvocation(ROWS)
  public float dot() {
    float sum = 0;
    for (int r = 0; r < ROWS; r++) {
      sum += Kernels.dot(x, 0, weights, r * rowBytes, tensorType, COLUMNS);
    }
    return sum;
  }

  /** Four positions against each row: ns per row (for all four). */
  @Benchmark
  @OperationsPerInvocation(ROWS)
  public float dot4() {
    float sum = 0;
    for (int r = 0; r < ROWS; r++) {
      Kernels.dot4(x, 0, COLUMNS, weights, r * rowBytes, tensorType, COLUMNS, out, 0, 1);
      sum += out[3];
    }
    return sum;
  }
}
