package io.kvtier.core.cache;

import io.kvtier.spi.CopyCheck;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferFailedException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.zip.CRC32C;

/**
 * A CRC32C of every block (page, layer) of this rank's host pool, taken when the block's bytes
 * arrive (a backup's copy from the device, an L3 fetch) and checked when they leave (a load-back
 * to the device, an L3 write): docs/CACHE.md, "Verified restores". A block whose bytes changed in
 * between fails its load-back (or its L3 write), and the cache treats that like any failed copy.
 *
 * <p>The sums are taken and checked on the copy path: on the transfer engine's copy threads where
 * the backend has them ({@link io.kvtier.spi.TransferEngine#submit(TransferBatch, CopyCheck)}),
 * and on the L3 executor's threads. A block's writer and its checker are ordered by the copies'
 * completions and the replicated commits between them, so a plain atomic array suffices. Counts
 * are rank-local.
 */
final class HostChecksums {
  /** Marks a sum as taken; the low 32 bits hold the CRC. */
  private static final long KNOWN = 1L << 32;

  private final HostMemory host;
  private final int layers;
  private final AtomicLongArray sums;
  private final LongAdder checked = new LongAdder();
  private final LongAdder mismatches = new LongAdder();

  /** The check that records the sums of a device-to-host batch. */
  final CopyCheck record = this::record;

  /** The check that verifies the sums of a host-to-device batch. */
  final CopyCheck verify = this::verify;

  HostChecksums(HostMemory host) {
    this.host = host;
    this.layers = host.spec().layout().layers();
    this.sums = new AtomicLongArray(Math.multiplyExact(host.spec().pages(), layers));
  }

  /** Blocks (page, layer) checked, on load-backs and L3 writes. */
  long checkedBlocks() {
    return checked.sum();
  }

  /** Blocks whose bytes did not match their sum. */
  long mismatches() {
    return mismatches.sum();
  }

  private void record(TransferBatch batch) {
    for (int i = 0; i < batch.size(); i++) {
      int page = batch.hostPage(i);
      if (batch.layer().isPresent()) {
        take(page, batch.layer().getAsInt());
      } else {
        for (int layer = 0; layer < layers; layer++) {
          take(page, layer);
        }
      }
    }
  }

  private void verify(TransferBatch batch) {
    for (int i = 0; i < batch.size(); i++) {
      int page = batch.hostPage(i);
      if (batch.layer().isPresent()) {
        check(page, batch.layer().getAsInt(), "load-back");
      } else {
        for (int layer = 0; layer < layers; layer++) {
          check(page, layer, "load-back");
        }
      }
    }
  }

  /** Records the sums of every layer of {@code slots[from .. to)}: pages an L3 fetch wrote. */
  void recordPages(int[] slots, int from, int to) {
    for (int i = from; i < to; i++) {
      for (int layer = 0; layer < layers; layer++) {
        take(slots[i], layer);
      }
    }
  }

  /**
   * Checks every layer of the pages an L3 write is about to read.
   *
   * @throws TransferFailedException naming the first block that does not match
   */
  void verifyPages(int[] slots) {
    for (int slot : slots) {
      for (int layer = 0; layer < layers; layer++) {
        check(slot, layer, "L3 write");
      }
    }
  }

  private void take(int page, int layer) {
    sums.set(page * layers + layer, KNOWN | (crc(host.block(page, layer)) & 0xFFFF_FFFFL));
  }

  private void check(int page, int layer, String what) {
    checked.increment();
    long kept = sums.get(page * layers + layer);
    int actual = crc(host.block(page, layer));
    if ((kept & KNOWN) == 0 || (int) kept != actual) {
      mismatches.increment();
      throw new TransferFailedException(
          "host page "
              + page
              + " layer "
              + layer
              + ((kept & KNOWN) == 0
                  ? " has no checksum: no backup or L3 fetch wrote it"
                  : String.format(
                      " changed since it was written (CRC32C %08x, now %08x)", (int) kept, actual))
              + ": the "
              + what
              + " is refused",
          null);
    }
  }

  private static int crc(MemorySegment block) {
    CRC32C crc = new CRC32C();
    crc.update(block.asByteBuffer());
    return (int) crc.getValue();
  }
}
