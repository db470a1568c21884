package io.kvtier.gguf;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A tensor read in place: its table entry and a slice of the mapped file holding its data. The
 * slice lives as long as the {@link GgufFile} it came from is open.
 *
 * @param info the tensor's name, dimensions, type and offset
 * @param data the tensor's bytes, {@code info.byteSize()} long
 */
public record GgufTensor(GgufTensorInfo info, MemorySegment data) {

  /** Validates that {@code data} is as long as the tensor. */
  public GgufTensor {
    Objects.requireNonNull(info, "info");
    Objects.requireNonNull(data, "data");
    if (data.byteSize() != info.byteSize()) {
      throw new GgufException(
          "tensor "
              + info.name()
              + ": data length="
              + data.byteSize()
              + " but its shape and type need "
              + info.byteSize()
              + " bytes");
    }
  }

  /** The tensor's name. */
  public String name() {
    return info.name();
  }

  /** The element type. */
  public GgufTensorType type() {
    return info.type();
  }

  /** The dimensions, innermost first. */
  public long[] dims() {
    return info.dims();
  }

  /** The bytes of row {@code row} (a slice, no copy). */
  public MemorySegment row(long row) {
    long rows = info.rowCount();
    if (row < 0 || row >= rows) {
      throw new IndexOutOfBoundsException(
          "tensor " + name() + ": index=" + row + " length=" + rows);
    }
    long rowBytes = info.type().bytesFor(info.rowLength());
    return data.asSlice(row * rowBytes, rowBytes);
  }

  /**
   * Row {@code row} as floats, for tests and reference paths: the hot path reads the data in
   * place.
   */
  public float[] dequantizeRow(long row) {
    float[] out = new float[Math.toIntExact(info.rowLength())];
    info.type().dequantize(row(row), 0, out.length, out, 0);
    return out;
  }
}
