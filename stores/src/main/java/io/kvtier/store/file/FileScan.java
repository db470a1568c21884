package io.kvtier.store.file;

import io.kvtier.spi.PageKey;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * What a file store finds in its directory when it opens: the page files, oldest modification
 * first, so that the rebuilt index evicts the pages written longest ago first.
 *
 * <p>On the way it deletes two kinds of leftovers: page files of the wrong size (cut short by a
 * crash, or of another layout, so unusable either way) and temporary files older than {@link
 * #STALE_TEMP_AGE} (a writer that died before its rename). Younger temporary files may belong to
 * a live writer of another store on the same directory, so they stay. Files of other names are
 * not the store's and are left alone.
 */
final class FileScan {

  /**
   * Age beyond which a temporary file is a crashed writer's. File times are wall-clock times,
   * hence a {@link Clock} here and not the engine's monotonic time source.
   */
  static final Duration STALE_TEMP_AGE = Duration.ofHours(1);

  /**
   * The outcome of a scan.
   *
   * @param oldestFirst the keys of the page files kept, oldest modification first
   * @param damaged page files of the wrong size, deleted
   * @param staleTemps stale temporary files, deleted
   */
  record Result(List<PageKey> oldestFirst, int damaged, int staleTemps) {}

  private record Found(PageKey key, Instant modified) {}

  private FileScan() {}

  /**
   * Scans a store's root directory (which exists).
   *
   * @param root the store's directory
   * @param fileBytes the size of a whole page file
   * @param clock wall time, to age temporary files
   * @return what was found
   * @throws UncheckedIOException if the root cannot be listed
   */
  static Result scan(Path root, long fileBytes, Clock clock) {
    List<Found> pages = new ArrayList<>();
    int damaged = 0;
    int staleTemps = 0;
    Instant staleBefore = clock.instant().minus(STALE_TEMP_AGE);
    for (Path shard : list(root)) {
      if (!Files.isDirectory(shard) || !shard.getFileName().toString().matches("[0-9a-f]{2}")) {
        continue;
      }
      for (Path file : list(shard)) {
        Optional<BasicFileAttributes> attributes = attributes(file);
        if (attributes.isEmpty() || !attributes.get().isRegularFile()) {
          continue;
        }
        Instant modified = attributes.get().lastModifiedTime().toInstant();
        if (file.getFileName().toString().endsWith(FilePageFormat.TEMP_SUFFIX)) {
          if (modified.isBefore(staleBefore) && deleteQuietly(file)) {
            staleTemps++;
          }
          continue;
        }
        Optional<PageKey> key = FilePageFormat.keyOf(file);
        if (key.isEmpty()) {
          continue;
        }
        if (attributes.get().size() != fileBytes) {
          if (deleteQuietly(file)) {
            damaged++;
          }
          continue;
        }
        pages.add(new Found(key.get(), modified));
      }
    }
    // Ties (coarse file times) break by key, so that a rescan rebuilds the same order.
    pages.sort(Comparator.comparing(Found::modified).thenComparing(f -> f.key().toHex()));
    return new Result(pages.stream().map(Found::key).toList(), damaged, staleTemps);
  }

  private static List<Path> list(Path directory) {
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory)) {
      entries.forEach(out::add);
    } catch (NoSuchFileException e) {
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot list the file store directory "
              + directory
              + ": "
              + e.getMessage()
              + "; make it readable or set "
              + FileConfig.DIRECTORY
              + " to another directory",
          e);
    }
    return out;
  }

  // Another store on the same directory may rename or delete a file while we look at it.
  private static Optional<BasicFileAttributes> attributes(Path file) {
    try {
      return Optional.of(Files.readAttributes(file, BasicFileAttributes.class));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  private static boolean deleteQuietly(Path file) {
    try {
      return Files.deleteIfExists(file);
    } catch (IOException e) {
      return false;
    }
  }
}
