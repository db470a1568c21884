package io.kvtier.model.llama;

import io.kvtier.gguf.GgufTensor;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.GgufUnsupportedException;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveAction;

/**
 * A weight matrix read in place from the mapped file: {@code rows} output rows of {@code columns}
 * weights each (GGUF's innermost dimension is the row).
 *
 * <p>Products split work across cores by output rows only: each (row, position) value is one
 * {@link Kernels#dot} call whatever the batch size or the split, so the split cannot change any
 * bit of the result. Positions are the inner loop, four at a time ({@link Kernels#dot4}, the
 * same bits as one {@link Kernels#dot} each), or eight for Q8_0 where 512-bit vectors are native
 * ({@link PairedQ8Dot}, the same bits again), so a weight row is read and widened once per four or
 * eight positions of a batch.
 */
public final class LlamaWeight {
  /**
   * Below this many multiply-adds a product runs on the calling thread. Why 2^19 (was 2^17): a
   * decode step's attention products (smollm-135m: 332K and 110K multiply-adds, about 25 us on
   * one core) took longer to hand to a parked pool thread and back than to compute; on the
   * calling thread Q8_0 decode went from 41-57 to 63-65 tokens/s (2 cores; docs/PERFORMANCE.md).
   */
  private static final long PARALLEL_THRESHOLD = 1L << 19;

  /**
   * Tasks per pool thread of one product. Why not 16 rows a task, as before: a decode step runs
   * about 200 products of a few hundred rows, and thousands of tiny tasks cost more in handing out
   * than in computing; a few tasks per thread still balance a core that is busy elsewhere. Each
   * row is still one dot, so the split changes no bit. Measured only together with
   * {@link Kernels#dot4} (docs/PERFORMANCE.md, "Llama runner against llama.cpp").
   */
  private static final int TASKS_PER_THREAD = 4;

  private static final int MIN_ROWS_PER_TASK = 16;

  /** Input bytes of one block of positions: most of a 32 KB L1 data cache. */
  private static final long INPUT_BLOCK_BYTES = 24 * 1024;

  private final String name;
  private final MemorySegment data;
  private final GgufTensorType type;
  private final int rows;
  private final int columns;
  private final long rowBytes;

  /**
   * Wraps {@code tensor} (2-D: columns innermost). Its data must be readable from any thread (a
   * {@code GgufFile}'s mapping is; a confined arena's segment is not).
   *
   * @throws GgufUnsupportedException if its type has no dot kernel or its rows are not whole blocks
   */
  public LlamaWeight(GgufTensor tensor) {
    Objects.requireNonNull(tensor, "tensor");
    this.name = tensor.name();
    this.data = tensor.data();
    this.type = tensor.type();
    this.columns = Math.toIntExact(tensor.info().rowLength());
    this.rows = Math.toIntExact(tensor.info().rowCount());
    this.rowBytes = type.bytesFor(columns);
    if (!Kernels.SUPPORTED_TYPES.contains(type)) {
      throw new GgufUnsupportedException(
          "tensor "
              + name
              + " is "
              + type
              + ", which has no dot kernel yet; supported: "
              + Kernels.SUPPORTED_TYPES);
    }
    if (columns % type.blockSize() != 0) {
      throw new GgufUnsupportedException(
          "tensor "
              + name
              + ": row length="
              + columns
              + " is not a multiple of the "
              + type
              + " block size "
              + type.blockSize());
    }
  }

  /** The tensor's name. */
  public String name() {
    return name;
  }

  /** The element type. */
  public GgufTensorType type() {
    return type;
  }

  /** Output rows. */
  public int rows() {
    return rows;
  }

  /** Weights per row (the input length). */
  public int columns() {
    return columns;
  }

  /** The dot of row {@code row} with {@code x[xOffset..xOffset+columns)}. */
  public float dotRow(int row, float[] x, int xOffset) {
    return Kernels.dot(x, xOffset, data, row * rowBytes, type, columns);
  }

  /**
   * {@code out[p*rows + r] = row r · in[p*columns ..]} for positions {@code p < positions}.
   */
  public void multiply(float[] in, int positions, float[] out) {
    if (in.length < positions * columns || out.length < positions * rows) {
      throw new IllegalArgumentException(
          name
              + ": positions="
              + positions
              + " need in="
              + positions * columns
              + " out="
              + positions * rows
              + " but got in="
              + in.length
              + " out="
              + out.length);
    }
    int eights =
        type == GgufTensorType.Q8_0 && PairedQ8Dot.AVAILABLE
            ? positions - positions % PairedQ8Dot.POSITIONS
            : 0;
    float[] pairs = eights == 0 ? in : PairedQ8Dot.interleave(in, eights, columns);
    if ((long) rows * columns * positions < PARALLEL_THRESHOLD) {
      multiplyRows(in, pairs, eights, positions, out, 0, rows);
    } else {
      ForkJoinPool pool = ForkJoinPool.commonPool();
      int tasks = TASKS_PER_THREAD * Math.max(1, pool.getParallelism());
      int grain = Math.max(MIN_ROWS_PER_TASK, (rows + tasks - 1) / tasks);
      pool.invoke(new RowsTask(in, pairs, eights, positions, out, 0, rows, grain));
    }
  }

  /**
   * Rows {@code [from, to)} of the product: the first {@code eights} positions through {@link
   * PairedQ8Dot} from their interleaved copy {@code pairs}, the rest four and then one at a time;
   * every (row, position) value is {@link Kernels#dot}'s bits either way.
   */
  private void multiplyRows(
      float[] in, float[] pairs, int eights, int positions, float[] out, int from, int to) {
    int block8 = positionBlock(PairedQ8Dot.POSITIONS);
    for (int first = 0; first < eights; first += block8) {
      int end = Math.min(eights, first + block8);
      for (int r = from; r < to; r++) {
        long at = r * rowBytes;
        for (int p = first; p < end; p += PairedQ8Dot.POSITIONS) {
          PairedQ8Dot.dot8(pairs, p * columns, data, at, columns, out, p * rows + r, rows);
        }
      }
    }
    int fours = eights + (positions - eights) / 4 * 4;
    int block = positionBlock(4);
    // A block of positions' inputs stays in the L1 cache while the rows stream past it.
    for (int first = eights; first < fours; first += block) {
      int end = Math.min(fours, first + block);
      for (int r = from; r < to; r++) {
        long at = r * rowBytes;
        for (int p = first; p < end; p += 4) {
          Kernels.dot4(in, p * columns, columns, data, at, type, columns, out, p * rows + r, rows);
        }
      }
    }
    for (int r = from; r < to; r++) {
      long at = r * rowBytes;
      for (int p = fours; p < positions; p++) {
        out[p * rows + r] = Kernels.dot(in, p * columns, data, at, type, columns);
      }
    }
  }

  /**
   * Positions (a multiple of {@code step}) whose inputs fit in {@link #INPUT_BLOCK_BYTES}. Why:
   * with all of a prefill's positions in the inner loop, every row read the whole input (128
   * positions of smollm-135m: 295 KB) from the L2 cache, one load per multiply-add.
   */
  private int positionBlock(int step) {
    return Math.max(step, (int) (INPUT_BLOCK_BYTES / (4L * columns)) / step * step);
  }

  private final class RowsTask extends RecursiveAction {
    private final float[] in;
    private final float[] pairs;
    private final int eights;
    private final int positions;
    private final float[] out;
    private final int from;
    private final int to;
    private final int grain;

    RowsTask(
        float[] in,
        float[] pairs,
        int eights,
        int positions,
        float[] out,
        int from,
        int to,
        int grain) {
      this.in = in;
      this.pairs = pairs;
      this.eights = eights;
      this.positions = positions;
      this.out = out;
      this.from = from;
      this.to = to;
      this.grain = grain;
    }

    @Override
    protected void compute() {
      if (to - from <= grain) {
        multiplyRows(in, pairs, eights, positions, out, from, to);
        return;
      }
      int mid = (from + to) >>> 1;
      invokeAll(
          new RowsTask(in, pairs, eights, positions, out, from, mid, grain),
          new RowsTask(in, pairs, eights, positions, out, mid, to, grain));
    }
  }

  @Override
  public String toString() {
    return name + " " + type + " " + rows + "x" + columns;
  }

  /**
   * The product with a block of the matrix, for one rank's share in tensor parallelism: {@code
   * out[p*rowCount + i] = row (firstRow+i), columns [firstColumn, firstColumn+columnCount) · in[p
   * *columnCount ..]} for positions {@code p < positions}. Each value is one {@link Kernels#dot}
   * call, so a block that is the whole matrix gives the bits of {@link #multiply}, and no split
   * of the work across threads changes any bit.
   *
   * @throws IllegalArgumentException if the block is outside the matrix, or its columns do not
   *     start and end on the type's block boundaries (a quantized row splits only between
   *     blocks), naming the tensor
   */
  public void multiplyBlock(
      float[] in,
      int positions,
      float[] out,
      int firstRow,
      int rowCount,
      int firstColumn,
      int columnCount) {
    if (firstRow < 0
        || rowCount < 0
        || firstRow + rowCount > rows
        || firstColumn < 0
        || columnCount < 0
        || firstColumn + columnCount > columns) {
      throw new IllegalArgumentException(
          name
              + ": rows ["
              + firstRow
              + ", "
              + (firstRow + rowCount)
              + ") columns ["
              + firstColumn
              + ", "
              + (firstColumn + columnCount)
              + ") are outside the "
              + rows
              + "x"
              + columns
              + " matrix");
    }
    checkColumnSplit(firstColumn, columnCount);
    if (in.length < positions * columnCount || out.length < positions * rowCount) {
      throw new IllegalArgumentException(
          name
              + ": positions="
              + positions
              + " need in="
              + positions * columnCount
              + " out="
              + positions * rowCount
              + " but got in="
              + in.length
              + " out="
              + out.length);
    }
    long columnBytes = type.bytesFor(firstColumn);
    java.util.function.IntConsumer row =
        i -> {
          long at = (firstRow + i) * rowBytes + columnBytes;
          for (int p = 0; p < positions; p++) {
            out[p * rowCount + i] = Kernels.dot(in, p * columnCount, data, at, type, columnCount);
          }
        };
    java.util.stream.IntStream range = java.util.stream.IntStream.range(0, rowCount);
    if ((long) rowCount * columnCount * positions >= PARALLEL_THRESHOLD) {
      range = range.parallel();
    }
    range.forEach(row);
  }

  /**
   * Checks that columns {@code [firstColumn, firstColumn+columnCount)} start and end on block
   * boundaries of this matrix's type, so that a rank can take them.
   *
   * @throws IllegalArgumentException naming the tensor, its type and block size otherwise
   */
  public void checkColumnSplit(int firstColumn, int columnCount) {
    int block = type.blockSize();
    if (firstColumn % block != 0 || columnCount % block != 0) {
      throw new IllegalArgumentException(
          name
              + " is "
              + type
              + " with blocks of "
              + block
              + " weights: columns ["
              + firstColumn
              + ", "
              + (firstColumn + columnCount)
              + ") do not start and end on block boundaries, so the rows cannot be split there"
              + " across ranks; use fewer ranks or a file whose head size is a multiple of "
              + block);
    }
  }
}
