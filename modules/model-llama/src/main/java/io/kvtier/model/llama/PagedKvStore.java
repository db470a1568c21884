package io.kvtier.model.llama;

import io.kvtier.gguf.ModelHyperparameters;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageMemory;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A sequence's K/V in kvtier's device pages, F32: position {@code p} lives in page {@code
 * table[p / pageSize]} at {@link KvLayout#keyOffset(int) keyOffset(p % pageSize)} and {@link
 * KvLayout#valueOffset(int) valueOffset(p % pageSize)} of layer {@code l}'s block {@code l}. The
 * page table is the request's (the cached prefix's pages, then its own). Reads gather whole
 * pages with two copies per page (all K, then all V).
 *
 * <p>In a tensor-parallel group the pool holds the rank's share of the KV heads ({@code kvHeads /
 * ranks}), and so does a row of this store. Not thread-safe; reused across requests with {@link
 * #bind}.
 */
public final class PagedKvStore implements KvStore {
  private final PageMemory device;
  private final KvLayout layout;
  private final int pageSize;
  private final long vectorBytes;
  private final int kvDim;
  private int[] table = new int[0];
  private int pages;

  /**
   * A view of one rank's device pool.
   *
   * @param device the pool, whose layout must be the rank's share of the model's
   * @param shape the model
   * @param ranks the ranks the KV heads are split over
   * @throws IllegalArgumentException if the pool's layout is not the share's, naming the {@code
   *     kvtier.*} keys to set
   */
  public PagedKvStore(PageMemory device, ModelHyperparameters shape, int ranks) {
    this.device = Objects.requireNonNull(device, "device");
    this.layout = device.spec().layout();
    checkLayout(shape, layout, ranks, true);
    this.pageSize = layout.pageSize();
    this.vectorBytes = layout.vectorBytes();
    this.kvDim = layout.kvHeads() * layout.headDim();
  }

  /**
   * The layout of one rank's pools: the model's layers, its KV heads over {@code ranks}, its head
   * size, 4-byte (F32) elements, and the page size given (free).
   *
   * @param shape the model
   * @param pageSize tokens per page
   * @param ranks the ranks, dividing the KV heads
   * @return the layout
   * @throws IllegalArgumentException if the KV heads do not divide by {@code ranks}
   */
  public static KvLayout layout(ModelHyperparameters shape, int pageSize, int ranks) {
    ShardPass.checkRanks(shape, ranks);
    return new KvLayout(
        shape.blockCount(), shape.headCountKv() / ranks, shape.headSize(), Float.BYTES, pageSize);
  }

  /**
   * Checks a layout against the model's: the whole model's ({@code shard} false: the config's
   * {@code kvtier.*} layout, as the engine checks it before splitting) or one rank's share.
   *
   * @throws IllegalArgumentException naming both layouts and the keys to set
   */
  static void checkLayout(ModelHyperparameters shape, KvLayout layout, int ranks, boolean shard) {
    KvLayout expected = layout(shape, layout.pageSize(), shard ? ranks : 1);
    if (!expected.equals(layout)) {
      throw new IllegalArgumentException(
          "the KV layout "
              + layout
              + " is not "
              + (shard ? "one rank's share over " + ranks + " ranks of " : "")
              + shape.name()
              + "'s "
              + expected
              + ": set kvtier.layers="
              + shape.blockCount()
              + ", kvtier.kv-heads="
              + shape.headCountKv()
              + ", kvtier.head-dim="
              + shape.headSize()
              + ", kvtier.dtype-bytes="
              + Float.BYTES
              + " (F32 KV; kvtier.page-size is free)");
    }
  }

  /**
   * Points this view at a request's page table.
   *
   * @param pageTable the slots, in token order; read, not kept beyond the next bind
   * @param count slots of {@code pageTable} that are valid
   * @return this view
   */
  public PagedKvStore bind(int[] pageTable, int count) {
    Objects.checkFromIndexSize(0, count, pageTable.length);
    this.table = pageTable;
    this.pages = count;
    return this;
  }

  /** Tokens per page. */
  public int pageSize() {
    return pageSize;
  }

  @Override
  public int layers() {
    return layout.layers();
  }

  @Override
  public int kvDim() {
    return kvDim;
  }

  /** The positions the bound page table covers. */
  @Override
  public int capacity() {
    return pages * pageSize;
  }

  private int page(int position) {
    int index = position / pageSize;
    if (position < 0 || index >= pages) {
      throw new IndexOutOfBoundsException(
          "position="
              + position
              + " needs page index="
              + index
              + " but the page table has "
              + pages
              + " pages of "
              + pageSize
              + " tokens: allocate the request's pages before running the model");
    }
    return table[index];
  }

  @Override
  public void write(int layer, int position, float[] keys, float[] values, int offset) {
    int slot = page(position);
    int inPage = position % pageSize;
    long at = (long) offset * Float.BYTES;
    device.write(
        slot,
        layer,
        layout.keyOffset(inPage),
        MemorySegment.ofArray(keys).asSlice(at, vectorBytes));
    device.write(
        slot,
        layer,
        layout.valueOffset(inPage),
        MemorySegment.ofArray(values).asSlice(at, vectorBytes));
  }

  @Override
  public void read(int layer, int count, float[] keys, float[] values) {
    MemorySegment k = MemorySegment.ofArray(keys);
    MemorySegment v = MemorySegment.ofArray(values);
    for (int first = 0; first < count; first += pageSize) {
      int slot = page(first);
      long bytes = Math.min(pageSize, count - first) * vectorBytes;
      long at = first * vectorBytes;
      device.read(slot, layer, layout.keyOffset(0), k.asSlice(at, bytes));
      device.read(slot, layer, layout.valueOffset(0), v.asSlice(at, bytes));
    }
  }
}
