package io.kvtier.simulator.workload;

import java.util.stream.Stream;

/**
 * A reproducible sequence of requests: a seeded generator or a trace file. Create one with {@link
 * Workloads#parse(String)} or with a generator's constructor.
 */
public interface Workload {

  /**
   * The spec that recreates this workload with {@link Workloads#parse(String)}, every parameter
   * spelled out, for reports and for reproducing a run.
   *
   * @return the spec, for example {@code shared-prefix:groups=64,alpha=1.0,...}
   */
  String spec();

  /**
   * The requests in arrival order (non-decreasing {@link Request#arrivalMillis()}). Every call
   * starts from the beginning and yields the same requests. A workload read from a file holds the
   * file's contents already, so the stream needs no closing.
   *
   * @return a new, sequential stream
   */
  Stream<Request> requests();
}
