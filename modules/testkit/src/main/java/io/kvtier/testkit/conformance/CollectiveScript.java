package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.Collective;
import io.kvtier.spi.ReduceOp;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** A random sequence of collective calls that every rank plays, with the expected results. */
final class CollectiveScript {

  private CollectiveScript() {}

  /** One call of the script. */
  sealed interface Step permits Reduce, Broadcast, Barrier {
    String tag();
  }

  /** An all-reduce: each rank's input and the expected result. */
  record Reduce(String tag, ReduceOp op, long[][] inputs, long[] expected) implements Step {}

  /** A broadcast of the root's payload. */
  record Broadcast(String tag, int root, byte[] payload) implements Step {}

  /** A barrier. */
  record Barrier(String tag) implements Step {}

  static List<Step> random(int size, int steps, Random random) {
    List<Step> script = new ArrayList<>();
    for (int s = 0; s < steps; s++) {
      // Tags differ from step to step, as call sites do in the engine's tick.
      String tag = "conformance-step-" + random.nextInt(4);
      switch (random.nextInt(3)) {
        case 0 -> {
          ReduceOp op = ReduceOp.values()[random.nextInt(ReduceOp.values().length)];
          int length = 1 + random.nextInt(6);
          long[][] inputs = new long[size][length];
          long[] expected = null;
          for (int r = 0; r < size; r++) {
            for (int i = 0; i < length; i++) {
              inputs[r][i] = random.nextLong();
            }
            if (expected == null) {
              expected = inputs[r].clone();
            } else {
              for (int i = 0; i < length; i++) {
                expected[i] = op.apply(expected[i], inputs[r][i]);
              }
            }
          }
          script.add(new Reduce(tag, op, inputs, expected));
        }
        case 1 -> {
          byte[] payload = new byte[random.nextInt(300)];
          random.nextBytes(payload);
          script.add(new Broadcast(tag, random.nextInt(size), payload));
        }
        default -> script.add(new Barrier(tag));
      }
    }
    return script;
  }

  /** Plays the script as one rank; returns each step's result (null for a barrier). */
  static List<Object> play(List<Step> script, Collective c, int rank) {
    List<Object> results = new ArrayList<>();
    for (Step step : script) {
      switch (step) {
        case Reduce r -> results.add(c.allReduce(r.op(), r.inputs()[rank].clone(), r.tag()));
        case Broadcast b ->
            results.add(
                c.broadcast(b.root(), rank == b.root() ? b.payload().clone() : null, b.tag()));
        case Barrier b -> {
          c.barrier(b.tag());
          results.add(null);
        }
      }
    }
    return results;
  }

  static void verify(List<Step> script, List<Object> results, int rank) {
    assertThat(results).as("results of rank %d", rank).hasSize(script.size());
    for (int i = 0; i < script.size(); i++) {
      Object got = results.get(i);
      switch (script.get(i)) {
        case Reduce r ->
            assertThat((long[]) got)
                .as("rank %d step %d: %s %s", rank, i, r.op(), r.tag())
                .isEqualTo(r.expected());
        case Broadcast b ->
            assertThat((byte[]) got)
                .as("rank %d step %d: broadcast from %d", rank, i, b.root())
                .isEqualTo(b.payload());
        case Barrier b -> assertThat(got).isNull();
      }
    }
  }
}
