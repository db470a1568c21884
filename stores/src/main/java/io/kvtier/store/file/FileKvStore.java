package io.kvtier.store.file;

import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import io.kvtier.store.internal.StoreArguments;
import io.kvtier.store.internal.StoreCounters;
import io.kvtier.store.internal.StoreGate;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.util.HexFormat;
import java.util.List;
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
final class FileKvStore implements KvStore {

  private static final System.Logger LOG = System.getLogger(FileKvStore.class.getName());

  private final Path root;
  private final KvLayout layout;
  private final long pageBytes;
  private final long fileBytes;
  private final long capacityPages;
  private final boolean fsync;
  private final StoreCounters counters;
  private final BackendMetrics metrics;
  private final StoreGate gate;
  private final String tempTag = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
  private final AtomicLong tempSequence = new AtomicLong();
  private final ReentrantLock lock = new ReentrantLock();
  private final FileIndex index = new FileIndex();

  private FileKvStore(Path root, KvStoreSpec spec, FileConfig config, BackendMetrics metrics) {
    this.root = root;
    this.layout = spec.layout();
    this.pageBytes = layout.pageBytes();
    this.fileBytes = FilePageFormat.HEADER_BYTES + pageBytes;
    this.capacityPages = spec.capacityBytes() / pageBytes;
    this.fsync = config.fsync();
    this.metrics = metrics;
    this.counters = new StoreCounters(metrics, "store.file");
    this.gate = new StoreGate("file store " + root);
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
  public int existsPrefix(List<PageKey> keys) {
    gate.enter("existsPrefix");
    try {
      StoreArguments.checkKeys("existsPrefix", keys);
      int n = 0;
      while (n < keys.size() && knows(keys.get(n))) {
        n++;
      }
      return n;
    } finally {
      gate.exit();
    }
  }

  @Override
  public int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
    gate.enter("get");
    try {
      StoreArguments.checkBatch("get", layout, keys, host, hostPages);
      int n = 0;
      while (n < keys.size() && load(keys.get(n), host, hostPages[n])) {
        n++;
      }
      counters.hits(n);
      counters.misses(keys.size() - n);
      return n;
    } finally {
      gate.exit();
    }
  }

  @Override
  public int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
    gate.enter("put");
    try {
      StoreArguments.checkBatch("put", layout, keys, host, hostPages);
      int stored = 0;
      for (int i = 0; i < keys.size(); i++) {
        PageKey key = keys.get(i);
        if (indexed(key)) {
          continue;
        }
        Stored outcome = store(key, host, hostPages[i]);
        // Pages after a failed one are useless as a prefix: stop instead of filling the disk.
        if (outcome == Stored.FAILED) {
          break;
        }
        if (outcome == Stored.NEW) {
          stored++;
        }
      }
      counters.puts(stored);
      int n = 0;
      while (n < keys.size() && indexed(keys.get(n))) {
        n++;
      }
      return n;
    } finally {
      gate.exit();
    }
  }

  @Override
  public KvStoreStats stats() {
    lock.lock();
    try {
      return counters.snapshot(index.size() * pageBytes);
    } finally {
      lock.unlock();
    }
  }

  /** Ends use of the store; its files stay for the next store on this directory. */
  @Override
  public void close() {
    gate.closeOnce(() -> {});
  }

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

  /** What became of one page of a put. */
  private enum Stored {
    /** Written, and new to the index. */
    NEW,
    /** Written, but a concurrent put of the same key had already counted it. */
    ALREADY_THERE,
    /** Not written. */
    FAILED
  }

  private Stored store(PageKey key, HostMemory host, int hostPage) {
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
        return adopt(key) ? Stored.NEW : Stored.ALREADY_THERE;
      } finally {
        lock.unlock();
      }
    } catch (IOException e) {
      deleteTemp(temp);
      metrics.increment("store.file.write-failures", 1);
      LOG.log(Level.WARNING, "cannot write page file {0}: {1}", file, e.toString());
      return Stored.FAILED;
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
