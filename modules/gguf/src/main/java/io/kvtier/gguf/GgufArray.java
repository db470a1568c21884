package io.kvtier.gguf;

import java.util.Arrays;
import java.util.Objects;

/**
 * An array metadata value: an element type and a Java array holding the elements, of the type
 * {@link #javaArrayType} names for it (unsigned elements keep their bit pattern: a UINT8 array is a
 * {@code byte[]}, a UINT32 array an {@code int[]}).
 *
 * @param elementType the GGUF type of every element
 * @param elements the Java array of elements
 */
public record GgufArray(GgufValueType elementType, Object elements) {

  /** Validates that {@code elements} is the Java array type for {@code elementType}. */
  public GgufArray {
    Objects.requireNonNull(elementType, "elementType");
    Objects.requireNonNull(elements, "elements");
    Class<?> expected = javaArrayType(elementType);
    if (expected != elements.getClass()) {
      throw new IllegalArgumentException(
          "a "
              + elementType
              + " array is held as "
              + expected.getSimpleName()
              + ", got "
              + elements.getClass().getSimpleName());
    }
  }

  /** The Java array type that holds elements of {@code type}. */
  public static Class<?> javaArrayType(GgufValueType type) {
    return switch (type) {
      case UINT8, INT8 -> byte[].class;
      case UINT16, INT16 -> short[].class;
      case UINT32, INT32 -> int[].class;
      case UINT64, INT64 -> long[].class;
      case FLOAT32 -> float[].class;
      case FLOAT64 -> double[].class;
      case BOOL -> boolean[].class;
      case STRING -> String[].class;
      case ARRAY -> GgufArray[].class;
    };
  }

  /** A STRING array. */
  public static GgufArray ofStrings(String... values) {
    return new GgufArray(GgufValueType.STRING, values.clone());
  }

  /** A FLOAT32 array. */
  public static GgufArray ofFloats(float... values) {
    return new GgufArray(GgufValueType.FLOAT32, values.clone());
  }

  /** An INT32 array. */
  public static GgufArray ofInts(int... values) {
    return new GgufArray(GgufValueType.INT32, values.clone());
  }

  /** The number of elements. */
  public int size() {
    return java.lang.reflect.Array.getLength(elements);
  }

  /** The elements as strings; only for a STRING array. */
  public String[] strings() {
    requireType(GgufValueType.STRING);
    return (String[]) elements;
  }

  /** The elements as floats; only for a FLOAT32 array. */
  public float[] floats() {
    requireType(GgufValueType.FLOAT32);
    return (float[]) elements;
  }

  /**
   * The elements as ints, widened from 8- and 16-bit types (unsigned ones zero-extended); for
   * 32-bit types the bit pattern.
   */
  public int[] ints() {
    return switch (elementType) {
      case INT32, UINT32 -> (int[]) elements;
      case INT8 -> {
        byte[] a = (byte[]) elements;
        int[] r = new int[a.length];
        for (int i = 0; i < a.length; i++) {
          r[i] = a[i];
        }
        yield r;
      }
      case UINT8 -> {
        byte[] a = (byte[]) elements;
        int[] r = new int[a.length];
        for (int i = 0; i < a.length; i++) {
          r[i] = a[i] & 0xFF;
        }
        yield r;
      }
      case INT16 -> {
        short[] a = (short[]) elements;
        int[] r = new int[a.length];
        for (int i = 0; i < a.length; i++) {
          r[i] = a[i];
        }
        yield r;
      }
      case UINT16 -> {
        short[] a = (short[]) elements;
        int[] r = new int[a.length];
        for (int i = 0; i < a.length; i++) {
          r[i] = a[i] & 0xFFFF;
        }
        yield r;
      }
      default -> throw new IllegalStateException("a " + elementType + " array has no int view");
    };
  }

  private void requireType(GgufValueType type) {
    if (elementType != type) {
      throw new IllegalStateException("the array holds " + elementType + ", not " + type);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof GgufArray other
        && elementType == other.elementType
        && Arrays.deepEquals(new Object[] {elements}, new Object[] {other.elements});
  }

  @Override
  public int hashCode() {
    return 31 * elementType.hashCode() + Arrays.deepHashCode(new Object[] {elements});
  }

  @Override
  public String toString() {
    int n = size();
    return elementType + "[" + n + "]";
  }
}
