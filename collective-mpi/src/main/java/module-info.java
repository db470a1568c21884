/**
 * The {@code mpi} collective: Open MPI's C library ({@code libmpi.so.40}) through {@code
 * java.lang.foreign}, one rank per process under {@code mpirun}. Needs native access: start java
 * with {@code --enable-native-access=io.kvtier.collective.mpi}.
 */
module io.kvtier.collective.mpi {
  requires transitive io.kvtier.spi;

  exports io.kvtier.collective.mpi;

  provides io.kvtier.spi.CollectiveProvider with
      io.kvtier.collective.mpi.MpiCollectiveProvider;
}
