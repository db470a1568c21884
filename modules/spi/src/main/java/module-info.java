/**
 * The service provider interfaces of kvtier: device and host page pools, page transfers, rank
 * collectives and the L3 page store, and the reader that every provider's typed configuration
 * parses its namespace with. Backends depend on this module only; the engine finds them with
 * {@link java.util.ServiceLoader}. No Guice, JCuda, Hazelcast or MPI type appears here.
 */
module io.kvtier.spi {
  exports io.kvtier.spi;
  exports io.kvtier.spi.config;
}
