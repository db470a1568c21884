package io.kvtier.store.file;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.PageKey;
import io.kvtier.store.internal.TestHostMemory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileScanTest {

  private static final Instant NOW = Instant.parse("2025-06-01T12:00:00Z");
  private static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);
  private static final int FILE_BYTES = 100;

  @TempDir Path root;

  private Path file(PageKey key, int bytes, Instant modified) throws Exception {
    Path file = FilePageFormat.pageFile(root, key);
    Files.createDirectories(file.getParent());
    Files.write(file, new byte[bytes]);
    Files.setLastModifiedTime(file, FileTime.from(modified));
    return file;
  }

  @Test
  void findsPagesOldestFirstAndDeletesWhatCannotBeUsed() throws Exception {
    List<PageKey> keys = TestHostMemory.keys(4, 5);
    file(keys.get(0), FILE_BYTES, NOW.minusSeconds(10));
    file(keys.get(1), FILE_BYTES, NOW.minusSeconds(300));
    Path shortFile = file(keys.get(2), FILE_BYTES - 1, NOW);
    Path shard = FilePageFormat.pageFile(root, keys.get(3)).getParent();
    Files.createDirectories(shard);
    Path staleTemp = Files.write(shard.resolve(keys.get(3).toHex() + ".a-1.tmp"), new byte[3]);
    Files.setLastModifiedTime(staleTemp, FileTime.from(NOW.minus(Duration.ofHours(2))));
    Path youngTemp = Files.write(shard.resolve(keys.get(3).toHex() + ".b-1.tmp"), new byte[3]);
    Files.setLastModifiedTime(youngTemp, FileTime.from(NOW.minusSeconds(5)));
    Path notes = Files.write(shard.resolve("notes.txt"), new byte[FILE_BYTES]);
    Path foreignDirectory = Files.createDirectories(root.resolve("backup"));

    FileScan.Result result = FileScan.scan(root, FILE_BYTES, CLOCK);

    assertThat(result.oldestFirst()).containsExactly(keys.get(1), keys.get(0));
    assertThat(result.damaged()).isEqualTo(1);
    assertThat(result.staleTemps()).isEqualTo(1);
    assertThat(shortFile).doesNotExist();
    assertThat(staleTemp).doesNotExist();
    assertThat(youngTemp).as("may be a live writer's").exists();
    assertThat(notes).as("not the store's").exists();
    assertThat(foreignDirectory).exists();
  }

  @Test
  void equalTimesBreakByKeySoThatEveryScanAgrees() throws Exception {
    List<PageKey> keys = TestHostMemory.keys(6, 9);
    for (PageKey key : keys) {
      file(key, FILE_BYTES, NOW);
    }
    List<PageKey> byHex = keys.stream().sorted((a, b) -> a.toHex().compareTo(b.toHex())).toList();
    assertThat(FileScan.scan(root, FILE_BYTES, CLOCK).oldestFirst()).isEqualTo(byHex);
  }

  @Test
  void anEmptyOrMissingRootHasNothing() {
    assertThat(FileScan.scan(root, FILE_BYTES, CLOCK).oldestFirst()).isEmpty();
    assertThat(FileScan.scan(root.resolve("absent"), FILE_BYTES, CLOCK).oldestFirst()).isEmpty();
  }
}
