package io.kvtier.bench;

import io.kvtier.simulator.workload.FixedTraces;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The prompts of the two fixed traces, generated once per trial and shared by every thread of a
 * benchmark. Each prompt is its own array, so a replay touches the same memory a server would.
 */
@State(Scope.Benchmark)
public class FixedTracePrompts {

  /** Creates the state; JMH instantiates it. */
  public FixedTracePrompts() {}

  /** The "shared-prefix" prompts in trace order. */
  public int[][] sharedPrefix;

  /** The "multiturn" prompts in trace order. */
  public int[][] multiturn;

  /** Generates the traces and checks their sizes against the constants the benchmarks use. */
  @Setup(Level.Trial)
  public void generate() {
    sharedPrefix = checked("shared-prefix", FixedTraces.SHARED_PREFIX_REQUESTS);
    multiturn = checked("multiturn", FixedTraces.MULTITURN_REQUESTS);
  }

  private static int[][] checked(String name, int expectedRequests) {
    int[][] prompts = FixedTraces.byName(name).prompts();
    // @OperationsPerInvocation takes a constant; a trace of another size would misreport the
    // per-request times without any other sign
    if (prompts.length != expectedRequests) {
      throw new IllegalStateException(
          "fixed trace %s has %d requests but the benchmarks divide by %d: update FixedTraces"
              .formatted(name, prompts.length, expectedRequests));
    }
    return prompts;
  }
}
