package io.kvtier.bench;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.simulator.replay.Replay;
import io.kvtier.simulator.replay.ReplayConfiguration;
import io.kvtier.simulator.replay.ReplayResult;
import io.kvtier.simulator.replay.ReplayTrace;
import io.kvtier.simulator.workload.Workloads;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One configuration of {@code kvtier replay} over a block-hash trace: a whole-trace replay per
 * invocation, on one thread, through {@link Replay#runOne} (a new cache each time, as the command
 * builds one per configuration). The score is milliseconds per replay; prompt tokens per second
 * per core are the trace's prompt tokens (printed at the end of the trial) over it. Run from the
 * repository root. The default trace, the Mooncake synthetic trace of docs/PERFORMANCE.md, is not
 * in the repository: download {@code FAST25-release/traces/synthetic_trace.jsonl} from
 * https://github.com/kvcache-ai/Mooncake to {@code ../shared/traces/mooncake-synthetic.jsonl}, or
 * name another trace:
 *
 * <pre>
 * modules/bench/run.sh TraceReplay -p trace=../shared/traces/mooncake-synthetic.jsonl
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = "--sun-misc-unsafe-memory-access=allow")
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class TraceReplayBenchmark {

  /** A {@code mooncake:} trace file, relative to the working directory (the repository root). */
  @Param({"../shared/traces/mooncake-synthetic.jsonl"})
  public String trace;

  /** Device capacity in tokens. */
  @Param({"3000000"})
  public long deviceTokens;

  /** Host capacity over device capacity: 0 is the engine alone (allocator-only mode). */
  @Param({"0", "4"})
  public int hostRatio;

  /** L3 capacity in tokens: 0 is no L3 tier (an L3 tier needs a host tier). */
  @Param({"0"})
  public long l3Tokens;

  /** Tokens per page. */
  @Param({"16"})
  public int pageSize;

  private ReplayTrace prompts;
  private ReplayConfiguration configuration;
  private ReplayResult last;

  /** Creates the benchmark; JMH instantiates it. */
  public TraceReplayBenchmark() {}

  /** Reads and expands the trace once per trial. */
  @Setup(Level.Trial)
  public void read() {
    if (!java.nio.file.Files.isRegularFile(java.nio.file.Path.of(trace))) {
      throw new IllegalStateException(
          "no trace "
              + trace
              + ": download the Mooncake synthetic trace (FAST25-release/traces/synthetic_trace.jsonl"
              + " of https://github.com/kvcache-ai/Mooncake) there, or give -p trace=PATH");
    }
    prompts = ReplayTrace.of(Workloads.parse("mooncake:" + trace), Integer.MAX_VALUE);
    configuration =
        ReplayConfiguration.of(
            pageSize,
            deviceTokens,
            deviceTokens * hostRatio,
            l3Tokens,
            EvictionPolicy.LRU,
            WritePolicy.WRITE_THROUGH);
  }

  /**
   * Replays the whole trace.
   *
   * @return the hit tokens, for the blackhole
   */
  @Benchmark
  public long replay() {
    last = Replay.runOne(prompts, configuration);
    return last.prefillTokensSaved();
  }

  /** Prints what a replay covered, to turn the score into tokens per second. */
  @TearDown(Level.Trial)
  public void report() {
    System.out.printf(
        "%n%s: %,d requests, %,d prompt tokens per replay, hit rate %.4f%n",
        configuration.label(),
        prompts.size(),
        prompts.promptTokens(),
        last.hitRate(ReplayResult.Tier.TOTAL));
  }
}
