/**
 * The L3 page stores: {@code memory}, a Caffeine cache of off-heap pages bounded by bytes, and
 * {@code file}, one checksummed file per page under a directory, bounded by bytes. The engine
 * finds them with {@link java.util.ServiceLoader} and uses them only when {@code kvtier.store}
 * names one.
 */
module io.kvtier.store {
  requires transitive io.kvtier.spi;
  requires com.github.benmanes.caffeine;

  exports io.kvtier.store.memory;
  exports io.kvtier.store.file;

  provides io.kvtier.spi.KvStoreProvider with
      io.kvtier.store.memory.MemoryKvStoreProvider,
      io.kvtier.store.file.FileKvStoreProvider;
}
