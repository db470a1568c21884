package io.kvtier.bench;

import io.kvtier.core.rank.Sampler;
import io.kvtier.core.rank.Sampling;
import io.kvtier.core.rank.TokenLogprob;
import io.kvtier.core.rank.TokenLogprobs;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One token chosen from a row of logits ({@link Sampler#choose}) for each way of choosing, against
 * two figures measured in the same run: the largest logit (greedy, the floor: one pass) and a sort
 * of the whole row (what a sampler without the thresholds pays for top-k or top-p). The rows are
 * Gaussian with a standard deviation of 3, as a language model's logits roughly are; a vocabulary
 * of Llama 2 (32,000) and of Qwen 2 (151,936).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
// JMH 1.37 reads field offsets through sun.misc.Unsafe, which JDK 24+ warns about on every fork
@Fork(value = 1, jvmArgsAppend = "--sun-misc-unsafe-memory-access=allow")
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class SamplerBenchmark {

  /** Tokens in a row. */
  @Param({"32000", "151936"})
  public int vocabulary;

  private float[] logits;
  private int position;

  /** Creates the benchmark; JMH instantiates it. */
  public SamplerBenchmark() {}

  /** Draws the row. */
  @Setup(Level.Trial)
  public void row() {
    Random random = new Random(1);
    logits = new float[vocabulary];
    for (int i = 0; i < vocabulary; i++) {
      logits[i] = (float) (random.nextGaussian() * 3);
    }
  }

  /**
   * The floor: the largest logit.
   *
   * @return the token
   */
  @Benchmark
  public int greedy() {
    return Sampler.choose(logits, 0, vocabulary, Sampling.GREEDY, position++);
  }

  /**
   * Temperature only: two passes, no sort.
   *
   * @return the token
   */
  @Benchmark
  public int temperature() {
    return Sampler.choose(logits, 0, vocabulary, new Sampling(0.8f, 1, 0, 7), position++);
  }

  /**
   * The nucleus, 0.95.
   *
   * @return the token
   */
  @Benchmark
  public int topP() {
    return Sampler.choose(logits, 0, vocabulary, new Sampling(0.8f, 0.95f, 0, 7), position++);
  }

  /**
   * The 40 most likely, then the nucleus.
   *
   * @return the token
   */
  @Benchmark
  public int topKTopP() {
    return Sampler.choose(logits, 0, vocabulary, new Sampling(0.8f, 0.95f, 40, 7), position++);
  }

  /**
   * A greedy token and its log-probabilities with the 20 most likely tokens ({@link
   * TokenLogprobs}, what {@code logprobs} or {@code top_logprobs} 20 costs a token on each rank).
   *
   * @return the record, for the blackhole
   */
  @Benchmark
  public TokenLogprob logprobs20() {
    int p = position++;
    TokenLogprobs record = TokenLogprobs.of(Sampling.MAX_LOGPROBS);
    record.record(
        p, logits, 0, vocabulary, Sampler.choose(logits, 0, vocabulary, Sampling.GREEDY, p));
    return record.take(p);
  }

  /**
   * The peer: a sort of the whole row as (logit, id) pairs, without the sampling around it.
   *
   * @return a token, for the blackhole
   */
  @Benchmark
  public int fullSort() {
    long[] keys = new long[vocabulary];
    for (int i = 0; i < vocabulary; i++) {
      keys[i] = ((long) -Float.floatToIntBits(logits[i]) << 32) | i;
    }
    Arrays.sort(keys);
    return (int) keys[position++ % 40];
  }
}
