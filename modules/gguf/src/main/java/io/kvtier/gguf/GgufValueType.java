package io.kvtier.gguf;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The type of a metadata value, with the numeric code GGUF stores for it. {@link GgufValue}
 * holds integers of every width as {@code Long} (unsigned ones zero-extended, UINT64 as its bit
 * pattern), floats as {@code Float} or {@code Double}, and arrays as {@link GgufArray}.
 */
public enum GgufValueType {
  /** Unsigned 8-bit integer. */
  UINT8(0, 1),
  /** Signed 8-bit integer. */
  INT8(1, 1),
  /** Unsigned 16-bit integer. */
  UINT16(2, 2),
  /** Signed 16-bit integer. */
  INT16(3, 2),
  /** Unsigned 32-bit integer. */
  UINT32(4, 4),
  /** Signed 32-bit integer. */
  INT32(5, 4),
  /** 32-bit float. */
  FLOAT32(6, 4),
  /** Boolean (one byte). */
  BOOL(7, 1),
  /** UTF-8 string. */
  STRING(8, -1),
  /** Array of one element type. */
  ARRAY(9, -1),
  /** Unsigned 64-bit integer. */
  UINT64(10, 8),
  /** Signed 64-bit integer. */
  INT64(11, 8),
  /** 64-bit float. */
  FLOAT64(12, 8);

  private static final GgufValueType[] BY_CODE = new GgufValueType[13];

  static {
    for (GgufValueType t : values()) {
      BY_CODE[t.code] = t;
    }
  }

  private final int code;
  private final int size;

  GgufValueType(int code, int size) {
    this.code = code;
    this.size = size;
  }

  /** The code GGUF stores for this type. */
  public int code() {
    return code;
  }

  /** The size of one value in bytes, or -1 for strings and arrays. */
  public int size() {
    return size;
  }

  /** Whether the type is one of the integer types. */
  public boolean isInteger() {
    return switch (this) {
      case UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64 -> true;
      default -> false;
    };
  }

  /**
   * The type with GGUF code {@code code}.
   *
   * @throws GgufUnsupportedException if no type has that code
   */
  public static GgufValueType ofCode(int code) {
    if (code < 0 || code >= BY_CODE.length) {
      throw new GgufUnsupportedException(
          "metadata value type "
              + Integer.toUnsignedString(code)
              + " is unknown; supported: "
              + Arrays.stream(values())
                  .map(t -> t.code + "=" + t)
                  .collect(Collectors.joining(", ")));
    }
    return BY_CODE[code];
  }
}
