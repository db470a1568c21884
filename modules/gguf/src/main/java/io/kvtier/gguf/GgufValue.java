package io.kvtier.gguf;

import java.util.Objects;

/**
 * One metadata value with its GGUF type. Integers of every width are held as {@code Long}
 * (unsigned ones zero-extended; UINT64 as its bit pattern), FLOAT32 as {@code Float}, FLOAT64 as
 * {@code Double}, BOOL as {@code Boolean}, STRING as {@code String} and ARRAY as
 * {@link GgufArray}.
 *
 * @param type the GGUF type the value is stored as
 * @param value the value, of the Java type given above for {@code type}
 */
public record GgufValue(GgufValueType type, Object value) {

  /** Validates that {@code value} has the Java type {@code type} is held as. */
  public GgufValue {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(value, "value");
    Class<?> expected =
        switch (type) {
          case UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64 -> Long.class;
          case FLOAT32 -> Float.class;
          case FLOAT64 -> Double.class;
          case BOOL -> Boolean.class;
          case STRING -> String.class;
          case ARRAY -> GgufArray.class;
        };
    if (!expected.isInstance(value)) {
      throw new IllegalArgumentException(
          "a "
              + type
              + " value is held as "
              + expected.getSimpleName()
              + ", got "
              + value.getClass().getSimpleName()
              + " "
              + value);
    }
    if (type.isInteger()) {
      checkRange(type, (Long) value);
    }
  }

  private static void checkRange(GgufValueType type, long v) {
    boolean ok =
        switch (type) {
          case UINT8 -> v >= 0 && v <= 0xFF;
          case INT8 -> v >= Byte.MIN_VALUE && v <= Byte.MAX_VALUE;
          case UINT16 -> v >= 0 && v <= 0xFFFF;
          case INT16 -> v >= Short.MIN_VALUE && v <= Short.MAX_VALUE;
          case UINT32 -> v >= 0 && v <= 0xFFFF_FFFFL;
          case INT32 -> v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE;
          default -> true;
        };
    if (!ok) {
      throw new IllegalArgumentException("value " + v + " does not fit " + type);
    }
  }

  /** A STRING value. */
  public static GgufValue ofString(String s) {
    return new GgufValue(GgufValueType.STRING, s);
  }

  /** A UINT32 value. */
  public static GgufValue ofUint32(long v) {
    return new GgufValue(GgufValueType.UINT32, v);
  }

  /** An INT32 value. */
  public static GgufValue ofInt32(int v) {
    return new GgufValue(GgufValueType.INT32, (long) v);
  }

  /** A UINT64 value. */
  public static GgufValue ofUint64(long v) {
    return new GgufValue(GgufValueType.UINT64, v);
  }

  /** A FLOAT32 value. */
  public static GgufValue ofFloat32(float v) {
    return new GgufValue(GgufValueType.FLOAT32, v);
  }

  /** A BOOL value. */
  public static GgufValue ofBool(boolean v) {
    return new GgufValue(GgufValueType.BOOL, v);
  }

  /** An ARRAY value. */
  public static GgufValue ofArray(GgufArray array) {
    return new GgufValue(GgufValueType.ARRAY, array);
  }

  @Override
  public String toString() {
    return type + ":" + value;
  }
}
