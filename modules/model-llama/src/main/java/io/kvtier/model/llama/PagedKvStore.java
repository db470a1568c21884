package io.kvtier.model.llama;

import io.kvtier.core.config.Parallelism;
import io.kvtier.gguf.ModelHyperparameters;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageMemory;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A sequence's K/V in kvtier's device pages, F32 or F16 ({@link KvType}: an F16 row is rounded
 * when written and widened when read): position {@code p} lives in page {@code table[p /
 * pageSize]} of layer {@code l}'s block {@code l}, all K rows of the page then all V rows. The page table is the request's (the cached prefix's pages, then its own). Reads gather
 * whole pages with two copies per page (all K, then all V).
 *
 * <p>In a tensor-parallel group the pool holds the rank's share of the KV heads ({@code kvHeads /
 * ranks}), and so does a row of this store: row {@code p % pageSize} of the page at {@link
 * KvLayout#keyOffset(int) keyOffset} and {@link KvLayout#valueOffset(int) valueOffset}. In a
 * context-parallel group ({@link Parallelism}) a row is every head, and the store holds the
 * rank's positions only ({@link Stripe}): its page holds {@code pageSize / ranks} rows, its
 * positions of that page in order, and {@link #read} returns the rank's rows. Not thread-safe;
 * reused across requests with {@link #bind}.
 */
public final class PagedKvStore implements KvStore {
  private final PageMemory device;
  private final KvLayout layout;
  private final int pageSize;
  private final Stripe stripe;
  private final int rowsPerPage;
  private final long vectorBytes;
  private final int kvDim;
  private final KvType type;

  /** F16 rows on their way to or from the pages. */
  private short[] halves = new short[0];

  private int[] table = new int[0];
  private int pages;

  /**
   * A view of one rank's device pool, the KV heads split over {@code ranks} (tensor parallelism).
   *
   * @param device the pool, whose layout must be the rank's share of the model's
   * @param shape the model
   * @param ranks the ranks the KV heads are split over
   * @throws IllegalArgumentException if the pool's layout is not the share's, naming the {@code
   *     kvtier.*} keys to set
   */
  public PagedKvStore(PageMemory device, ModelHyperparameters shape, int ranks) {
    this(device, shape, 0, ranks, Parallelism.TP);
  }

  /**
   * A view of rank {@code rank}'s device pool in a group of {@code ranks} split as {@code
   * parallelism} says.
   *
   * @param device the pool, whose layout must be the rank's
   * @param shape the model
   * @param rank the rank
   * @param ranks the ranks
   * @param parallelism tp or cp
   * @throws IllegalArgumentException if the pool's layout is not the rank's or the ranks cannot
   *     split the model so, naming the keys to set
   */
  public PagedKvStore(
      PageMemory device, ModelHyperparameters shape, int rank, int ranks, Parallelism parallelism) {
    this(
        device,
        shape,
        rank,
        ranks,
        parallelism,
        KvType.ofBytes(device.spec().layout().dtypeBytes()));
  }

  /**
   * A view of rank {@code rank}'s device pool, whose K/V must be of type {@code type}.
   *
   * @throws IllegalArgumentException if the pool's layout is not the rank's with {@code type}'s
   *     element size, or the ranks cannot split the model so, naming the keys to set
   */
  public PagedKvStore(
      PageMemory device,
      ModelHyperparameters shape,
      int rank,
      int ranks,
      Parallelism parallelism,
      KvType type) {
    this.device = Objects.requireNonNull(device, "device");
    this.type = Objects.requireNonNull(type, "type");
    this.layout = device.spec().layout();
    checkLayout(shape, layout, ranks, parallelism, true, type);
    this.pageSize = layout.pageSize();
    boolean striped = parallelism.cp() && ranks > 1;
    this.stripe = striped ? new Stripe(rank, ranks, parallelism.interleave()) : Stripe.WHOLE;
    this.rowsPerPage = pageSize / stripe.ranks();
    this.vectorBytes = layout.vectorBytes() * stripe.ranks();
    this.kvDim = (int) (vectorBytes / type.bytes());
  }

  /**
   * The layout of one rank's pools under tensor parallelism: the model's layers, its KV heads
   * over {@code ranks}, its head size, 4-byte (F32) elements, and the page size given (free).
   *
   * @param shape the model
   * @param pageSize tokens per page
   * @param ranks the ranks, dividing the KV heads
   * @return the layout
   * @throws IllegalArgumentException if the KV heads do not divide by {@code ranks}
   */
  public static KvLayout layout(ModelHyperparameters shape, int pageSize, int ranks) {
    return layout(shape, pageSize, ranks, Parallelism.TP, KvType.F32);
  }

  /**
   * The layout of one rank's pools: under tp, the KV heads over {@code ranks}; under cp, a page
   * of {@code pageSize} tokens of which the rank holds {@code pageSize / ranks} positions of
   * every head, written as {@code kvHeads / g} heads of {@code headSize / (ranks / g)} floats
   * ({@code g} the greatest common divisor of the KV heads and the ranks), so that a page is
   * {@code 1/ranks} of the model's bytes.
   *
   * @param shape the model
   * @param pageSize tokens per page
   * @param ranks the ranks
   * @param parallelism tp or cp
   * @param type the stored values' type
   * @return the layout
   * @throws IllegalArgumentException if the ranks cannot split the model so, naming the option
   */
  public static KvLayout layout(
      ModelHyperparameters shape, int pageSize, int ranks, Parallelism parallelism, KvType type) {
    if (!parallelism.cp() || ranks == 1) {
      ShardPass.checkRanks(shape, ranks);
      return new KvLayout(
          shape.blockCount(),
          shape.headCountKv() / ranks,
          shape.headSize(),
          type.bytes(),
          pageSize);
    }
    checkStripes(shape, pageSize, ranks, parallelism.interleave());
    int g = gcd(shape.headCountKv(), ranks);
    return new KvLayout(
        shape.blockCount(),
        shape.headCountKv() / g,
        shape.headSize() / (ranks / g),
        type.bytes(),
        pageSize);
  }

  /**
   * Checks that {@code ranks} ranks can stripe a sequence in blocks of {@code interleave}
   * positions over pages of {@code pageSize} tokens: every page must hold the same number of each
   * rank's positions, and a rank's share of a row must be whole floats of every head's split.
   *
   * @throws IllegalArgumentException naming the options to change
   */
  static void checkStripes(ModelHyperparameters shape, int pageSize, int ranks, int interleave) {
    if (ranks < 1) {
      throw new IllegalArgumentException("ranks=" + ranks + " must be >= 1 (kvtier.ranks)");
    }
    long cycle = (long) ranks * interleave;
    if (pageSize % cycle != 0) {
      throw new IllegalArgumentException(
          "--parallel cp over "
              + ranks
              + " ranks with interleave "
              + interleave
              + " needs a page size that is a multiple of ranks x interleave = "
              + cycle
              + ", so that each rank holds the same share of every page; kvtier.page-size is "
              + pageSize
              + ": change kvtier.page-size, kvtier.ranks or kvtier.cp-interleave");
    }
    int split = ranks / gcd(shape.headCountKv(), ranks);
    if (shape.headSize() % split != 0) {
      throw new IllegalArgumentException(
          "--parallel cp over "
              + ranks
              + " ranks: a rank's page holds 1/"
              + ranks
              + " of the bytes of "
              + shape.name()
              + "'s pages, written as heads of "
              + shape.headSize()
              + " / "
              + split
              + " floats, which do not divide: use a number of ranks (kvtier.ranks) that"
              + " divides "
              + shape.headCountKv()
              + " KV heads x "
              + shape.headSize()
              + " floats");
    }
  }

  private static int gcd(int a, int b) {
    return b == 0 ? a : gcd(b, a % b);
  }

  /**
   * Checks a layout against the model's: the whole model's ({@code shard} false: the config's
   * {@code kvtier.*} layout, as the engine checks it before splitting) or one rank's.
   *
   * @throws IllegalArgumentException naming both layouts and the keys to set
   */
  static void checkLayout(
      ModelHyperparameters shape, KvLayout layout, int ranks, boolean shard, KvType type) {
    checkLayout(shape, layout, ranks, Parallelism.TP, shard, type);
  }

  static void checkLayout(
      ModelHyperparameters shape,
      KvLayout layout,
      int ranks,
      Parallelism parallelism,
      boolean shard,
      KvType type) {
    KvLayout expected = layout(shape, layout.pageSize(), shard ? ranks : 1, parallelism, type);
    if (!expected.equals(layout)) {
      throw new IllegalArgumentException(
          "the KV layout "
              + layout
              + " is not "
              + (shard
                  ? "one rank's "
                      + (parallelism.cp() ? parallelism + " " : "")
                      + "share over "
                      + ranks
                      + " ranks of "
                  : "")
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
              + type.bytes()
              + " ("
              + type
              + " KV, model option kv-type="
              + type.option()
              + "; kvtier.page-size is free)");
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

  /** The positions the bound page table covers (this rank's and the others'). */
  @Override
  public int capacity() {
    return pages * pageSize;
  }

  /** The positions this store holds rows of: every position, or under cp the rank's. */
  Stripe stripe() {
    return stripe;
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

  /**
   * {@inheritDoc}
   *
   * @throws IllegalArgumentException under cp, for a position of another rank
   */
  @Override
  public void write(int layer, int position, float[] keys, float[] values, int offset) {
    int slot = page(position);
    if (!stripe.owns(position)) {
      throw new IllegalArgumentException(
          "position="
              + position
              + " is rank "
              + stripe.owner(position)
              + "'s, not rank "
              + stripe.rank()
              + "'s: under cp a rank writes its own positions only");
    }
    long row = stripe.localIndex(position) % rowsPerPage;
    device.write(slot, layer, row * vectorBytes, stored(keys, offset));
    device.write(slot, layer, (rowsPerPage + row) * vectorBytes, stored(values, offset));
  }

  /** The row {@code v[offset, offset + kvDim)} as the pages hold it. */
  private MemorySegment stored(float[] v, int offset) {
    if (type == KvType.F32) {
      return MemorySegment.ofArray(v).asSlice((long) offset * Float.BYTES, vectorBytes);
    }
    short[] h = halves = halves.length >= kvDim ? halves : new short[kvDim];
    for (int i = 0; i < kvDim; i++) {
      h[i] = Float.floatToFloat16(v[offset + i]);
    }
    return MemorySegment.ofArray(h).asSlice(0, vectorBytes);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Under cp the rows are this rank's: its positions {@code from..count-1} in its own order.
   * Only the pages holding those rows are read.
   */
  @Override
  public void read(int layer, int from, int count, float[] keys, float[] values) {
    if (type == KvType.F16) {
      readHalves(layer, from, count, keys, values);
      return;
    }
    MemorySegment k = MemorySegment.ofArray(keys);
    MemorySegment v = MemorySegment.ofArray(values);
    for (int first = from; first < count; first = (first / rowsPerPage + 1) * rowsPerPage) {
      int slot = page(first / rowsPerPage * pageSize);
      long skip = first % rowsPerPage * vectorBytes;
      long bytes = (Math.min((first / rowsPerPage + 1) * rowsPerPage, count) - first) * vectorBytes;
      long at = first * vectorBytes;
      device.read(slot, layer, skip, k.asSlice(at, bytes));
      device.read(slot, layer, rowsPerPage * vectorBytes + skip, v.asSlice(at, bytes));
    }
  }

  /** {@link #read} of F16 pages: each page's rows into {@link #halves}, then widened. */
  private void readHalves(int layer, int from, int count, float[] keys, float[] values) {
    short[] h =
        halves = halves.length >= rowsPerPage * kvDim ? halves : new short[rowsPerPage * kvDim];
    MemorySegment segment = MemorySegment.ofArray(h);
    for (int first = from; first < count; first = (first / rowsPerPage + 1) * rowsPerPage) {
      int slot = page(first / rowsPerPage * pageSize);
      long skip = first % rowsPerPage * vectorBytes;
      int rows = Math.min((first / rowsPerPage + 1) * rowsPerPage, count) - first;
      long bytes = rows * vectorBytes;
      int n = rows * kvDim;
      int at = first * kvDim;
      device.read(slot, layer, skip, segment.asSlice(0, bytes));
      for (int i = 0; i < n; i++) {
        keys[at + i] = Float.float16ToFloat(h[i]);
      }
      device.read(slot, layer, rowsPerPage * vectorBytes + skip, segment.asSlice(0, bytes));
      for (int i = 0; i < n; i++) {
        values[at + i] = Float.float16ToFloat(h[i]);
      }
    }
  }
}
