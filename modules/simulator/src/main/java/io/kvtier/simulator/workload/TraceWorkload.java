package io.kvtier.simulator.workload;

import java.util.Objects;
import java.util.stream.Stream;

/**
 * A token trace (a JSONL file or a fixed trace) as a workload. The format carries prompts only, so
 * every request arrives at time 0, in trace order, with an output budget of 0 (prefill only): a
 * pure cache replay.
 *
 * @param spec the spec that recreates this workload
 * @param trace the prompts
 */
public record TraceWorkload(String spec, Trace trace) implements Workload {

  /** Validates the fields. */
  public TraceWorkload {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(trace, "trace");
  }

  @Override
  public Stream<Request> requests() {
    return trace.requests(0);
  }
}
