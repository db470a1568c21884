/**
 * The deterministic multi-rank simulator and the request workloads: R cache replicas driven by
 * core's rank loop in virtual time, checked after every tick. It needs no test library at run
 * time (the {@code kvtier simulate} command runs it); its faults come from the SPI-only wrappers
 * of {@code io.kvtier.asserting}.
 */
module io.kvtier.simulator {
  requires transitive io.kvtier.spi;
  requires transitive io.kvtier.core;
  requires transitive io.kvtier.asserting;
  // kvtier replay measures its speed per core in thread CPU time.
  requires java.management;

  exports io.kvtier.simulator;
  exports io.kvtier.simulator.workload;
  exports io.kvtier.simulator.replay;
}
