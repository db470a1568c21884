/**
 * The L3 page stores: {@code memory}, a Caffeine cache of off-heap pages bounded by bytes, and
 * {@code file}, one file per page under a directory, bounded by bytes. Both keep a CRC32C per page
 * and check it at every read; both can damage a stored page for tests ({@link
 * io.kvtier.spi.DamageableKvStore}). The engine
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
