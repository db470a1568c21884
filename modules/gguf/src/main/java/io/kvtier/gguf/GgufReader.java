package io.kvtier.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Parses a mapped GGUF file's header, metadata and tensor table. Version 1 stores counts, string
 * lengths, array lengths and dimensions as u32; versions 2 and 3 as u64 (version 3 only adds
 * big-endian files, which are refused here).
 */
final class GgufReader {
  static final int MAGIC = 0x46554747; // "GGUF" read little-endian

  private static final ValueLayout.OfInt INT =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfLong LONG =
      ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfShort SHORT =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfFloat FLOAT =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfDouble DOUBLE =
      ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  record Parsed(
      int version,
      Map<String, GgufValue> metadata,
      Map<String, GgufTensorInfo> tensors,
      long dataStart,
      int alignment) {}

  private final MemorySegment file;
  private final String name;
  private long pos;
  private int version;

  GgufReader(MemorySegment file, String name) {
    this.file = file;
    this.name = name;
  }

  Parsed parse() {
    need(8, "header");
    int magic = file.get(INT, 0);
    if (magic != MAGIC) {
      throw new GgufException(
          name
              + " is not a GGUF file: magic 0x"
              + Integer.toHexString(magic)
              + ", expected 0x"
              + Integer.toHexString(MAGIC)
              + " (\"GGUF\")");
    }
    pos = 4;
    version = u32("version");
    if (version < 1 || version > 3) {
      String hint =
          Integer.reverseBytes(version) >= 1 && Integer.reverseBytes(version) <= 3
              ? " (a big-endian file: only little-endian files are supported)"
              : "";
      throw new GgufUnsupportedException(
          name
              + ": GGUF version "
              + Integer.toUnsignedString(version)
              + hint
              + "; supported: 1, 2, 3");
    }
    long tensorCount = count("tensor count");
    long keyCount = count("metadata count");
    Map<String, GgufValue> metadata = new LinkedHashMap<>();
    for (long i = 0; i < keyCount; i++) {
      String key = string("metadata key");
      GgufValueType type = GgufValueType.ofCode(u32("type of " + key));
      GgufValue value = new GgufValue(type, value(type, key));
      if (metadata.put(key, value) != null) {
        throw new GgufException(name + ": metadata key '" + key + "' appears twice");
      }
    }
    int alignment = alignmentOf(metadata);
    Map<String, GgufTensorInfo> tensors = new LinkedHashMap<>();
    for (long i = 0; i < tensorCount; i++) {
      String tensorName = string("tensor name");
      int dimCount = u32("dimension count of " + tensorName);
      if (dimCount < 1 || dimCount > 4) {
        throw new GgufException(
            name + ": tensor " + tensorName + " has " + dimCount + " dimensions; 1 to 4 allowed");
      }
      long[] dims = new long[dimCount];
      for (int d = 0; d < dimCount; d++) {
        dims[d] = count("dimension of " + tensorName);
      }
      int code = u32("type of " + tensorName);
      GgufTensorType type;
      try {
        type = GgufTensorType.ofCode(code);
      } catch (GgufUnsupportedException e) {
        throw new GgufUnsupportedException(name + ": tensor " + tensorName + ": " + e.getMessage());
      }
      long offset = u64("offset of " + tensorName);
      if (offset % alignment != 0) {
        throw new GgufException(
            name
                + ": tensor "
                + tensorName
                + " at offset "
                + offset
                + " is not aligned to "
                + alignment);
      }
      GgufTensorInfo info = new GgufTensorInfo(tensorName, dims, type, offset);
      if (tensors.put(tensorName, info) != null) {
        throw new GgufException(name + ": tensor '" + tensorName + "' appears twice");
      }
    }
    long dataStart = align(pos, alignment);
    for (GgufTensorInfo info : tensors.values()) {
      long end = dataStart + info.offset() + info.byteSize();
      if (end > file.byteSize()) {
        throw new GgufException(
            name
                + " is truncated: tensor "
                + info.name()
                + " ends at byte "
                + end
                + " but the file has "
                + file.byteSize());
      }
    }
    return new Parsed(version, metadata, tensors, dataStart, alignment);
  }

  private int alignmentOf(Map<String, GgufValue> metadata) {
    GgufValue v = metadata.get(GgufFile.ALIGNMENT_KEY);
    if (v == null) {
      return GgufFile.DEFAULT_ALIGNMENT;
    }
    if (!v.type().isInteger()) {
      throw new GgufMetadataException(
          GgufFile.ALIGNMENT_KEY,
          name + ": " + GgufFile.ALIGNMENT_KEY + " is " + v.type() + ", expected an integer");
    }
    long a = (Long) v.value();
    if (a <= 0 || a > 1 << 20 || Long.bitCount(a) != 1) {
      throw new GgufException(
          name + ": " + GgufFile.ALIGNMENT_KEY + "=" + a + " must be a power of two");
    }
    return (int) a;
  }

  static long align(long offset, int alignment) {
    return (offset + alignment - 1) / alignment * alignment;
  }

  private Object value(GgufValueType type, String key) {
    return switch (type) {
      case UINT8 -> (long) (u8(key));
      case INT8 -> (long) (byte) u8(key);
      case UINT16 -> (long) (u16(key) & 0xFFFF);
      case INT16 -> (long) u16(key);
      case UINT32 -> u32(key) & 0xFFFF_FFFFL;
      case INT32 -> (long) u32(key);
      case UINT64, INT64 -> u64(key);
      case FLOAT32 -> Float.intBitsToFloat(u32(key));
      case FLOAT64 -> Double.longBitsToDouble(u64(key));
      case BOOL -> u8(key) != 0;
      case STRING -> string(key);
      case ARRAY -> array(key);
    };
  }

  private GgufArray array(String key) {
    GgufValueType type = GgufValueType.ofCode(u32("array type of " + key));
    long count = count("array length of " + key);
    if (count > Integer.MAX_VALUE - 8) {
      throw new GgufException(
          name
              + ": array "
              + key
              + " has "
              + count
              + " elements; at most "
              + (Integer.MAX_VALUE - 8)
              + " supported");
    }
    int n = (int) count;
    if (type.size() > 0) {
      need((long) n * type.size(), "array " + key);
    }
    Object elements =
        switch (type) {
          case UINT8, INT8 -> copy(ValueLayout.JAVA_BYTE, new byte[n], n);
          case UINT16, INT16 -> copy(SHORT, new short[n], n);
          case UINT32, INT32 -> copy(INT, new int[n], n);
          case UINT64, INT64 -> copy(LONG, new long[n], n);
          case FLOAT32 -> copy(FLOAT, new float[n], n);
          case FLOAT64 -> copy(DOUBLE, new double[n], n);
          case BOOL -> {
            boolean[] b = new boolean[n];
            for (int i = 0; i < n; i++) {
              b[i] = u8(key) != 0;
            }
            yield b;
          }
          case STRING -> {
            String[] s = new String[n];
            for (int i = 0; i < n; i++) {
              s[i] = string(key);
            }
            yield s;
          }
          case ARRAY -> {
            GgufArray[] a = new GgufArray[n];
            for (int i = 0; i < n; i++) {
              a[i] = array(key);
            }
            yield a;
          }
        };
    return new GgufArray(type, elements);
  }

  private Object copy(ValueLayout layout, Object array, int n) {
    MemorySegment.copy(file, layout, pos, array, 0, n);
    pos += (long) n * layout.byteSize();
    return array;
  }

  private long count(String what) {
    return version == 1 ? u32(what) & 0xFFFF_FFFFL : checkedCount(u64(what), what);
  }

  private long checkedCount(long v, String what) {
    if (v < 0 || v > file.byteSize()) {
      throw new GgufException(
          name
              + ": "
              + what
              + " is "
              + Long.toUnsignedString(v)
              + ", more than the file's "
              + file.byteSize()
              + " bytes could hold");
    }
    return v;
  }

  private String string(String what) {
    long length = count("length of " + what);
    need(length, what);
    if (length > Integer.MAX_VALUE - 8) {
      throw new GgufException(name + ": string " + what + " of " + length + " bytes is too long");
    }
    byte[] bytes = new byte[(int) length];
    MemorySegment.copy(file, ValueLayout.JAVA_BYTE, pos, bytes, 0, bytes.length);
    pos += length;
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private int u8(String what) {
    need(1, what);
    return file.get(ValueLayout.JAVA_BYTE, pos++) & 0xFF;
  }

  private short u16(String what) {
    need(2, what);
    short v = file.get(SHORT, pos);
    pos += 2;
    return v;
  }

  private int u32(String what) {
    need(4, what);
    int v = file.get(INT, pos);
    pos += 4;
    return v;
  }

  private long u64(String what) {
    need(8, what);
    long v = file.get(LONG, pos);
    pos += 8;
    return v;
  }

  private void need(long bytes, String what) {
    if (bytes < 0 || pos + bytes > file.byteSize()) {
      throw new GgufException(
          name
              + " is truncated: reading "
              + what
              + " at byte "
              + pos
              + " needs "
              + bytes
              + " bytes, the file has "
              + file.byteSize());
    }
  }
}
