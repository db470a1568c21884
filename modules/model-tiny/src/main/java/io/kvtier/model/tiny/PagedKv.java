package io.kvtier.model.tiny;

import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageMemory;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A sequence's KV in kvtier's device pages: position {@code p} lives in page {@code
 * table[p / pageSize]} at {@link KvLayout#keyOffset(int) keyOffset(p % pageSize)} and {@link
 * KvLayout#valueOffset(int) valueOffset(p % pageSize)} of each layer's block. The page table is
 * the request's ({@code RankCache.copyPageTable}): the cached prefix's pages, then the request's
 * own. Reads gather whole pages with two copies per page (all K, then all V), not one per token.
 *
 * <p>Not thread-safe; reused across requests with {@link #bind}.
 */
public final class PagedKv implements KvSequence {
  private final PageMemory device;
  private final KvLayout layout;
  private final int pageSize;
  private final long vectorBytes;

  /** The block of each layer's KV in a page slot, -1 for none ({@link ModelConfig#pageLayers}). */
  private final int[] blocks;

  private int[] table = new int[0];
  private int pages;
  // Heap views of the caller's arrays, kept while the same arrays come back (they do: a
  // ForwardPass owns fixed scratch arrays), so that a copy needs no new segment per token.
  private final View writeKeys = new View();
  private final View writeValues = new View();
  private final View readKeys = new View();
  private final View readValues = new View();

  /**
   * Creates a view of a device pool.
   *
   * @param device the device pool the page table indexes
   * @param config the model, whose KV layout the pool must have
   * @throws IllegalArgumentException if the pool's layout is not the model's
   */
  public PagedKv(PageMemory device, ModelConfig config) {
    this(device, config, 1);
  }

  /**
   * Creates a view of one rank's device pool in a tensor-parallel group: its pages hold the KV of
   * the rank's shard of the heads.
   *
   * @param device the device pool the page table indexes
   * @param config the model
   * @param ranks the ranks the heads are split over
   * @throws IllegalArgumentException if the pool's layout is not the shard's
   */
  public PagedKv(PageMemory device, ModelConfig config, int ranks) {
    this.device = Objects.requireNonNull(device, "device");
    this.layout = device.spec().layout();
    config.checkLayout(layout, ranks);
    this.pageSize = layout.pageSize();
    this.vectorBytes = layout.vectorBytes();
    this.blocks = new int[config.layers()];
    for (int l = 0; l < blocks.length; l++) {
      blocks[l] = config.layerMix().pageBlock(l, config.windowedSwa());
    }
  }

  private int block(int layer) {
    int block = blocks[layer];
    if (block < 0) {
      throw new IllegalStateException(
          "layer "
              + layer
              + " keeps no KV in the pages (an SWA layer with windows, or a recurrent one): its"
              + " window lives with the request and in the snapshots (docs/HYBRID.md §4)");
    }
    return block;
  }

  /**
   * Points this view at a request's page table.
   *
   * @param pageTable the slots, in token order; read, not kept beyond the next bind
   * @param count slots of {@code pageTable} that are valid
   * @return this view
   */
  public PagedKv bind(int[] pageTable, int count) {
    Objects.checkFromIndexSize(0, count, pageTable.length);
    this.table = pageTable;
    this.pages = count;
    return this;
  }

  private int page(int position) {
    int index = position / pageSize;
    if (index >= pages) {
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
  public void write(
      int layer, int position, float[] keys, int keyOffset, float[] values, int valueOffset) {
    int slot = page(position);
    int inPage = position % pageSize;
    int block = block(layer);
    device.write(
        slot,
        block,
        layout.keyOffset(inPage),
        writeKeys.of(keys).asSlice((long) keyOffset * Float.BYTES, vectorBytes));
    device.write(
        slot,
        block,
        layout.valueOffset(inPage),
        writeValues.of(values).asSlice((long) valueOffset * Float.BYTES, vectorBytes));
  }

  @Override
  public void read(int layer, int length, float[] keys, float[] values) {
    MemorySegment k = readKeys.of(keys);
    MemorySegment v = readValues.of(values);
    int block = block(layer);
    for (int first = 0; first < length; first += pageSize) {
      int slot = page(first);
      long bytes = Math.min(pageSize, length - first) * vectorBytes;
      long at = first * vectorBytes;
      device.read(slot, block, layout.keyOffset(0), k.asSlice(at, bytes));
      device.read(slot, block, layout.valueOffset(0), v.asSlice(at, bytes));
    }
  }

  /** The heap segment of the last array seen. */
  private static final class View {
    private float[] array;
    private MemorySegment segment;

    MemorySegment of(float[] a) {
      if (a != array) {
        array = a;
        segment = MemorySegment.ofArray(a);
      }
      return segment;
    }
  }
}
