package io.kvtier.store.file;

import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.PageKey;
import io.kvtier.store.internal.AbstractKvStore;
import io.kvtier.store.internal.StoreCounters;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The {@code file} store; see {@link FileKvStoreProvider} for the layout on disk.
 *
 * <p>Concurrency: page files are written and read outside any lock. The index and the directory
 * entries change together under {@link #lock}: the rename that publishes a page, the index entry
 * that counts it, and the deletions that evict beyond the capacity. So within one store the index
 * and the files agree. A reader that opened a file before it was evicted keeps reading the whole
 * file (an unlinked file lives until it is closed), and a reader that comes after finds no file:
 * a miss, never a partial page.
 */
final class FileKvStore extends AbstractKvStore {

  private static final System.Logger LOG = System.getLogger(FileKvStore.class.getName());

  private final Path root;
  private final long pageBytes;
  private final long fileBytes;
  private final long capacityPages;
  private final boolean fsync;
  private final BackendMetrics metrics;
  private final String tempTag = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
  private final AtomicLong tempSequence = new AtomicLong();
  private final ReentrantLock lock = new ReentrantLock();
  private final FileIndex index = new FileIndex();

  private FileKvStore(Path root, KvStoreSpec spec, FileConfig config, BackendMetrics metrics) {
    super(spec.layout(), new StoreCounters(metrics, "store.file"), "file store " + root);
    this.root = root;
    this.pageBytes = layout.pageBytes();
    this.fileBytes = FilePageFormat.HEADER_BYTES + pageBytes;
    this.capacityPages = spec.capacityBytes() / pageBytes;
    this.fsync = config.fsync();
    this.metrics = metrics;
  }

  /** Creates the directory if needed and rebuilds the index from the page files found there. */
  static FileKvStore open(
      Path root, KvStoreSpec spec, FileConfig config, BackendMetrics metrics, Clock clock) {
    try {
      Files.createDirectories(root);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot create the file store directory "
              + root
              + " ("
              + FileConfig.DIRECTORY
              + "="
              + config.directory()
              + "): "
              + e
              + "; make it writable or set "
              + FileConfig.DIRECTORY
              + " to another directory",
          e);
    }
    FileKvStore store = new FileKvStore(root, spec, config, metrics);
    FileScan.Result found = FileScan.scan(root, store.fileBytes, clock);
    store.counters.corrupt(found.damaged());
    store.lock.lock();
    try {
      found.oldestFirst().forEach(store.index::add);
      store.evictOverCapacity();
    } finally {
      store.lock.unlock();
    }
    return store;
  }

  @Override
  protected boolean exists(PageKey key) {
    return knows(key);
  }

  @Override
  protected boolean read(PageKey key, HostMemory host, int hostPage) {
    return load(key, host, hostPage);
  }

  @Override
  protected Written write(PageKey key, HostMemory host, int hostPage) {
    return indexed(key) ? Written.PRESENT : store(key, host, hostPage);
  }

  @Override
  protected boolean holds(PageKey key) {
    return indexed(key);
  }

  /** Flips a bit of the page file in place: header or payload, each covered by a CRC32C. */
  @Override
  protected boolean flip(PageKey key, long bit) {
    Path file = FilePageFormat.pageFile(root, key);
    try (FileChannel channel =
        FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      long size = channel.size();
      if (size == 0) {
        return false;
      }
      long at = Math.floorMod(bit, 8 * size);
      ByteBuffer one = ByteBuffer.allocate(1);
      if (channel.read(one, at / 8) != 1) {
        return false;
      }
      one.put(0, (byte) (one.get(0) ^ (1 << (int) (at % 8)))).rewind();
      channel.write(one, at / 8);
      return true;
    } catch (NoSuchFileException e) {
      return false;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot damage the page file " + file, e);
    }
  }

  @Override
  protected long bytesStored() {
    lock.lock();
    try {
      return index.size() * pageBytes;
    } finally {
      lock.unlock();
    }
  }

  // close() keeps the files for the next store on this directory: no release().

  private boolean indexed(PageKey key) {
    lock.lock();
    try {
      return index.contains(key);
    } finally {
      lock.unlock();
    }
  }

  /** In the index, or a whole-sized page file written by another store on this directory. */
  private boolean knows(PageKey key) {
    if (indexed(key)) {
      return true;
    }
    Path file = FilePageFormat.pageFile(root, key);
    try {
      if (Files.size(file) != fileBytes) {
        return false;
      }
    } catch (IOException e) {
      return false;
    }
    lock.lock();
    try {
      return adoptIfPresent(key);
    } finally {
      lock.unlock();
    }
  }

  private boolean load(PageKey key, HostMemory host, int hostPage) {
    Path file = FilePageFormat.pageFile(root, key);
    try {
      FilePageIo.read(file, layout, key, host, hostPage);
    } catch (NoSuchFileException e) {
      forgetIfMissing(key);
      return false;
    } catch (DamagedPageException e) {
      counters.corrupt(1);
      LOG.log(Level.WARNING, "deleting damaged page file {0}: {1}", file, e.getMessage());
      forget(key, file);
      return false;
    } catch (IOException e) {
      // Possibly transient (an I/O error, a full table of open files): a miss, file kept.
      metrics.increment("store.file.read-failures", 1);
      LOG.log(Level.WARNING, "cannot read page file {0}: {1}", file, e.toString());
      return false;
    }
    lock.lock();
    try {
      if (index.contains(key)) {
        index.touch(key);
      } else {
        // Read outside the lock: an eviction may have deleted the file since. The bytes read
        // are whole and checked, so the caller may use them, but the page is only indexed
        // again if its file is still there.
        adoptIfPresent(key);
      }
    } finally {
      lock.unlock();
    }
    return true;
  }

  /**
   * Under the lock: indexes a page file found on disk (written by another store on this
   * directory), unless it was deleted since it was seen; deletions happen under this lock.
   */
  private boolean adoptIfPresent(PageKey key) {
    if (index.contains(key)) {
      return true;
    }
    if (!Files.isRegularFile(FilePageFormat.pageFile(root, key))) {
      return false;
    }
    adopt(key);
    return true;
  }

  /** Writes a page file and publishes it; PRESENT if a concurrent put had counted it first. */
  private Written store(PageKey key, HostMemory host, int hostPage) {
    Path file = FilePageFormat.pageFile(root, key);
    Path temp =
        file.resolveSibling(
            key.toHex()
                + "."
                + tempTag
                + "-"
                + tempSequence.incrementAndGet()
                + FilePageFormat.TEMP_SUFFIX);
    try {
      Files.createDirectories(file.getParent());
      FilePageIo.write(temp, layout, key, host, hostPage, fsync);
      lock.lock();
      try {
        Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        return adopt(key) ? Written.NEW : Written.PRESENT;
      } finally {
        lock.unlock();
      }
    } catch (IOException e) {
      deleteTemp(temp);
      metrics.increment("store.file.write-failures", 1);
      LOG.log(Level.WARNING, "cannot write page file {0}: {1}", file, e.toString());
      return Written.FAILED;
    }
  }

  /**
   * Under the lock: counts a page whose file is in place, evicting beyond the capacity.
   *
   * @return true if the page was new to the index
   */
  private boolean adopt(PageKey key) {
    if (!index.add(key)) {
      return false;
    }
    evictOverCapacity();
    return true;
  }

  /**
   * Forgets a page whose file this thread found missing, unless a writer has put the page again
   * since (the read ran outside the lock; renames and deletions happen under it).
   */
  private void forgetIfMissing(PageKey key) {
    lock.lock();
    try {
      if (!Files.isRegularFile(FilePageFormat.pageFile(root, key))) {
        index.remove(key);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Forgets a page that is gone or bad; deletes {@code damaged} if given. */
  private void forget(PageKey key, Path damaged) {
    lock.lock();
    try {
      index.remove(key);
      if (damaged != null) {
        deleteQuietly(damaged);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Under the lock. The newest page is never the eldest, since the capacity is >= 1 page. */
  private void evictOverCapacity() {
    long evicted = 0;
    while (index.size() > capacityPages) {
      PageKey eldest = index.eldest();
      index.remove(eldest);
      deleteQuietly(FilePageFormat.pageFile(root, eldest));
      evicted++;
    }
    counters.evictions(evicted);
  }

  // The temporary file may not exist (the failure came before it), or its directory may be
  // what failed: nothing worth a second warning.
  private static void deleteTemp(Path temp) {
    try {
      Files.deleteIfExists(temp);
    } catch (IOException e) {
      // A stale temporary file is deleted by the scan of a later open.
    }
  }

  private static void deleteQuietly(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      // Left behind; the next scan at open finds it again, and eviction retries it then.
      LOG.log(Level.WARNING, "cannot delete {0}: {1}", file, e.toString());
    }
  }
}
