package io.kvtier.store.file;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.TimeSource;
import io.kvtier.store.internal.TestHostMemory;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the conformance suite does not pin: eviction order at open, write failures, sharing. */
class FileKvStoreTest {

  private static final KvLayout LAYOUT = new KvLayout(2, 1, 4, 2, 2);
  private final TestHostMemory host = new TestHostMemory(LAYOUT, 8, MemoryLayout.PAGE_FIRST);

  @TempDir Path directory;

  @AfterEach
  void close() {
    host.close();
  }

  private BackendContext context() {
    return new BackendContext(
        0,
        Map.of(FileConfig.DIRECTORY, directory.toString()),
        TimeSource.SYSTEM,
        BackendMetrics.NOOP);
  }

  private KvStore open(KvLayout layout, int capacityPages) {
    return new FileKvStoreProvider()
        .open(new KvStoreSpec(layout, capacityPages * layout.pageBytes(), "unit"), context());
  }

  private Path fileOf(PageKey key) {
    return FileKvStoreProvider.pageFile(
        FileConfig.fromProperties(context().properties()), "unit", key);
  }

  private int put(KvStore store, List<PageKey> keys) {
    int[] pages = new int[keys.size()];
    for (int i = 0; i < keys.size(); i++) {
      host.fill(i, keys.get(i));
      pages[i] = i;
    }
    return store.put(keys, host, pages);
  }

  @Test
  void reopeningWithLessCapacityEvictsTheOldestFiles() throws Exception {
    List<PageKey> keys = TestHostMemory.keys(3, 1);
    try (KvStore store = open(LAYOUT, 4)) {
      assertThat(put(store, keys)).isEqualTo(3);
    }
    Instant base = Instant.parse("2025-01-01T00:00:00Z");
    Files.setLastModifiedTime(fileOf(keys.get(0)), FileTime.from(base.plusSeconds(20)));
    Files.setLastModifiedTime(fileOf(keys.get(1)), FileTime.from(base));
    Files.setLastModifiedTime(fileOf(keys.get(2)), FileTime.from(base.plusSeconds(10)));
    try (KvStore store = open(LAYOUT, 2)) {
      KvStoreStats stats = store.stats();
      assertThat(stats.evictions()).isEqualTo(1);
      assertThat(stats.bytesStored()).isEqualTo(2 * LAYOUT.pageBytes());
      assertThat(fileOf(keys.get(1))).doesNotExist();
      assertThat(store.existsPrefix(List.of(keys.get(0)))).isEqualTo(1);
      assertThat(store.existsPrefix(List.of(keys.get(2)))).isEqualTo(1);
    }
  }

  @Test
  void theLeastRecentlyReadPageIsEvictedFirst() {
    List<PageKey> keys = TestHostMemory.keys(3, 2);
    try (KvStore store = open(LAYOUT, 2)) {
      put(store, keys.subList(0, 2));
      assertThat(store.get(List.of(keys.get(0)), host, new int[] {5})).isEqualTo(1);
      put(store, List.of(keys.get(2)));
      assertThat(store.existsPrefix(List.of(keys.get(0)))).as("read last").isEqualTo(1);
      assertThat(store.existsPrefix(List.of(keys.get(1)))).as("eldest").isZero();
      assertThat(fileOf(keys.get(1))).doesNotExist();
    }
  }

  @Test
  void aWriteThatFailsEndsTheBatchWithoutAnException() throws Exception {
    List<PageKey> keys = TestHostMemory.keys(3, 3);
    try (KvStore store = open(LAYOUT, 8)) {
      // A plain file where the key's shard directory must go: its page cannot be written.
      Path shard = fileOf(keys.get(1)).getParent();
      assertThat(shard)
          .as("the keys lie in different shards")
          .isNotEqualTo(fileOf(keys.get(0)).getParent())
          .isNotEqualTo(fileOf(keys.get(2)).getParent());
      Files.createDirectories(shard.getParent());
      Files.deleteIfExists(shard);
      Files.write(shard, new byte[1]);
      assertThat(put(store, keys)).isEqualTo(1);
      assertThat(store.stats().puts()).isEqualTo(1);
      assertThat(fileOf(keys.get(2))).as("pages after a failed one are not written").doesNotExist();
    }
  }

  @Test
  void aFileUnderAnotherKeysNameIsACountedMissAndIsDeleted() throws Exception {
    List<PageKey> keys = TestHostMemory.keys(2, 4);
    try (KvStore store = open(LAYOUT, 8)) {
      put(store, keys);
      Files.copy(
          fileOf(keys.get(0)),
          fileOf(keys.get(1)),
          java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      assertThat(store.get(keys, host, new int[] {4, 5})).isEqualTo(1);
      assertThat(store.stats().corrupt()).isEqualTo(1);
      assertThat(fileOf(keys.get(1))).doesNotExist();
    }
  }

  @Test
  void storesOnOneDirectoryAdoptEachOthersPages() {
    List<PageKey> keys = TestHostMemory.keys(2, 5);
    try (KvStore writer = open(LAYOUT, 8);
        KvStore reader = open(LAYOUT, 8)) {
      put(writer, keys);
      assertThat(reader.stats().bytesStored()).isZero();
      assertThat(reader.existsPrefix(keys)).isEqualTo(2);
      assertThat(reader.stats().bytesStored()).isEqualTo(2 * LAYOUT.pageBytes());
      assertThat(reader.get(keys, host, new int[] {6, 7})).isEqualTo(2);
      assertThat(host.bytes(7)).isEqualTo(TestHostMemory.content(keys.get(1), LAYOUT));
    }
  }

  @Test
  void aStoreOfAnotherLayoutDeletesThePagesItCannotUse() {
    List<PageKey> keys = TestHostMemory.keys(2, 6);
    try (KvStore store = open(LAYOUT, 8)) {
      put(store, keys);
    }
    KvLayout other = new KvLayout(3, 1, 4, 2, 2);
    try (KvStore store = open(other, 8)) {
      assertThat(store.stats().corrupt()).isEqualTo(2);
      assertThat(store.existsPrefix(keys)).isZero();
    }
  }

  @Test
  void rejectsNamespacesThatNameAParentAndDirectoriesThatCannotBeMade() throws Exception {
    assertThatThrownBy(
            () ->
                new FileKvStoreProvider()
                    .open(new KvStoreSpec(LAYOUT, LAYOUT.pageBytes(), ".."), context()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("namespace='..'");
    Path blocker = Files.write(directory.resolve("unit"), new byte[1]);
    assertThatThrownBy(() -> open(LAYOUT, 1))
        .isInstanceOf(UncheckedIOException.class)
        .hasMessageContaining("cannot create the file store directory " + blocker)
        .hasMessageContaining("set file.directory to another directory");
  }

  @Test
  void aBitFlippedInAPageFileByTheHookIsACountedMissAndTheFileIsDeleted() throws Exception {
    List<PageKey> keys = TestHostMemory.keys(2, 6);
    long fileBytes = FilePageFormat.HEADER_BYTES + LAYOUT.pageBytes();
    // A bit of the header's key, of the header's checksum, and of the payload.
    long[] bits = {8L * 40 + 3, 8L * 81, 8 * fileBytes - 1};
    try (KvStore store = open(LAYOUT, 4)) {
      io.kvtier.spi.DamageableKvStore damageable = (io.kvtier.spi.DamageableKvStore) store;
      long corrupt = 0;
      for (long bit : bits) {
        put(store, keys);
        assertThat(damageable.flipStoredBit(keys.get(1), bit)).isTrue();
        assertThat(store.get(keys, host, new int[] {4, 5})).as("bit %d", bit).isEqualTo(1);
        assertThat(store.stats().corrupt()).isEqualTo(++corrupt);
        assertThat(fileOf(keys.get(1))).doesNotExist();
      }
      assertThat(damageable.flipStoredBit(keys.get(1), 0)).as("no file").isFalse();
    }
  }
}
