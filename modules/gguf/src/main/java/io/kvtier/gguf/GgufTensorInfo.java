package io.kvtier.gguf;

import java.util.Arrays;
import java.util.Objects;

/**
 * A tensor's entry in a GGUF file's table.
 *
 * @param name the tensor's name, such as {@code blk.0.attn_q.weight}
 * @param dims the dimensions, innermost (contiguous) first, as ggml's {@code ne}
 * @param type the element type
 * @param offset the byte offset of the data from the file's data start
 */
public record GgufTensorInfo(String name, long[] dims, GgufTensorType type, long offset) {

  /** Validates the entry and copies {@code dims}. */
  public GgufTensorInfo {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(type, "type");
    dims = dims.clone();
    if (dims.length == 0 || dims.length > 4) {
      throw new GgufException(
          "tensor " + name + " has " + dims.length + " dimensions; 1 to 4 allowed");
    }
    for (long d : dims) {
      if (d <= 0) {
        throw new GgufException(
            "tensor "
                + name
                + " has dimensions "
                + Arrays.toString(dims)
                + "; each must be positive");
      }
    }
    if (offset < 0) {
      throw new GgufException("tensor " + name + " has negative offset " + offset);
    }
    if (dims[0] % type.blockSize() != 0) {
      throw new GgufException(
          "tensor "
              + name
              + " has rows of "
              + dims[0]
              + " weights, not a multiple"
              + " of "
              + type
              + "'s block size "
              + type.blockSize());
    }
  }

  /** The dimensions, innermost first (a copy). */
  @Override
  public long[] dims() {
    return dims.clone();
  }

  /** The number of elements. */
  public long elementCount() {
    long n = 1;
    for (long d : dims) {
      n = Math.multiplyExact(n, d);
    }
    return n;
  }

  /** The length of one row (the innermost dimension). */
  public long rowLength() {
    return dims[0];
  }

  /** The number of rows (the product of all dimensions but the innermost). */
  public long rowCount() {
    return elementCount() / dims[0];
  }

  /** The size of the data in bytes. */
  public long byteSize() {
    return type.bytesFor(elementCount());
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof GgufTensorInfo t
        && name.equals(t.name)
        && Arrays.equals(dims, t.dims)
        && type == t.type
        && offset == t.offset;
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, Arrays.hashCode(dims), type, offset);
  }

  @Override
  public String toString() {
    return name + " " + type + " " + Arrays.toString(dims) + " @" + offset;
  }
}
