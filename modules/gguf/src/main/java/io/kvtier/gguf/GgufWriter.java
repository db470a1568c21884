package io.kvtier.gguf;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Writes a GGUF file (version 1, 2 or 3): metadata in insertion order, then the tensor table,
 * then each tensor's data at an offset aligned to {@code general.alignment} (32 when the
 * metadata does not set it). llama.cpp reads versions 2 and 3 only.
 *
 * <pre>{@code
 * GgufWriter w = new GgufWriter(3);
 * w.put("general.architecture", GgufValue.ofString("llama"));
 * w.addTensor("token_embd.weight", GgufTensorType.F32, new long[] {64, 512}, data);
 * w.write(path);
 * }</pre>
 */
public final class GgufWriter {
  private final int version;
  private final Map<String, GgufValue> metadata = new LinkedHashMap<>();
  private final Map<String, PendingTensor> tensors = new LinkedHashMap<>();

  private record PendingTensor(String name, GgufTensorType type, long[] dims, TensorBytes bytes) {}

  /** Where a tensor's bytes come from at {@link #write}: a segment, or rows made on the fly. */
  private interface TensorBytes {
    void writeTo(FileChannel out) throws IOException;
  }

  /**
   * Makes a tensor's rows at write time, so a model larger than memory (a synthetic 1B-shape
   * file) can be written one row at a time.
   */
  @FunctionalInterface
  public interface RowSource {
    /** Fills {@code values} (one row: the innermost dimension) with row {@code row}. */
    void fill(long row, float[] values);
  }

  /**
   * A writer for GGUF {@code version}.
   *
   * @throws GgufUnsupportedException unless {@code version} is 1, 2 or 3
   */
  public GgufWriter(int version) {
    if (version < 1 || version > 3) {
      throw new GgufUnsupportedException(
          "cannot write GGUF version " + version + "; supported: 1, 2, 3");
    }
    this.version = version;
  }

  /** A writer for {@code version} holding {@code file}'s metadata and tensors (a rewrite). */
  public static GgufWriter copyOf(GgufFile file, int version) {
    GgufWriter w = new GgufWriter(version);
    file.metadata().forEach(w::put);
    for (GgufTensorInfo info : file.tensorInfos()) {
      GgufTensor t = file.tensor(info.name());
      w.addTensor(info.name(), info.type(), info.dims(), t.data());
    }
    return w;
  }

  /** Sets metadata {@code key} to {@code value} (replacing an earlier value in place). */
  public GgufWriter put(String key, GgufValue value) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    metadata.put(key, value);
    return this;
  }

  /**
   * Adds a tensor whose bytes are {@code data} (not copied until {@link #write}).
   *
   * @throws IllegalArgumentException if {@code data}'s length does not fit the shape and type,
   *     or the name is taken
   */
  public GgufWriter addTensor(String name, GgufTensorType type, long[] dims, MemorySegment data) {
    GgufTensorInfo info = new GgufTensorInfo(name, dims, type, 0);
    if (data.byteSize() != info.byteSize()) {
      throw new IllegalArgumentException(
          "tensor "
              + name
              + ": data length="
              + data.byteSize()
              + " but "
              + type
              + " "
              + Arrays.toString(dims)
              + " needs "
              + info.byteSize());
    }
    if (tensors.containsKey(name)) {
      throw new IllegalArgumentException("tensor " + name + " was already added");
    }
    tensors.put(name, new PendingTensor(name, type, dims.clone(), out -> writeSegment(out, data)));
    return this;
  }

  /**
   * Adds a tensor whose rows {@code source} makes at {@link #write} time, stored as {@code type}
   * (quantized as {@link GgufTensorType#quantize} says).
   */
  public GgufWriter addTensor(String name, GgufTensorType type, long[] dims, RowSource source) {
    Objects.requireNonNull(source, "source");
    GgufTensorInfo info = new GgufTensorInfo(name, dims, type, 0);
    if (tensors.containsKey(name)) {
      throw new IllegalArgumentException("tensor " + name + " was already added");
    }
    int rowLength = Math.toIntExact(info.rowLength());
    long rows = info.rowCount();
    TensorBytes bytes =
        out -> {
          float[] values = new float[rowLength];
          long rowBytes = type.bytesFor(rowLength);
          ByteBuffer buffer =
              ByteBuffer.allocateDirect(Math.toIntExact(rowBytes)).order(ByteOrder.LITTLE_ENDIAN);
          MemorySegment segment = MemorySegment.ofBuffer(buffer);
          for (long r = 0; r < rows; r++) {
            source.fill(r, values);
            type.quantize(values, 0, rowLength, segment, 0);
            buffer.clear();
            writeFully(out, buffer);
          }
        };
    tensors.put(name, new PendingTensor(name, type, dims.clone(), bytes));
    return this;
  }

  private static void writeSegment(FileChannel out, MemorySegment data) throws IOException {
    for (long done = 0; done < data.byteSize(); ) {
      long chunk = Math.min(1L << 30, data.byteSize() - done);
      writeFully(out, data.asSlice(done, chunk).asByteBuffer());
      done += chunk;
    }
  }

  /** Writes the file to {@code path}, replacing any file there. */
  public void write(Path path) throws IOException {
    int alignment = alignment();
    Encoder header = new Encoder(version);
    header.u32(GgufReader.MAGIC);
    header.u32(version);
    header.count(tensors.size());
    header.count(metadata.size());
    metadata.forEach(
        (key, value) -> {
          header.string(key);
          header.u32(value.type().code());
          header.value(value);
        });
    List<Long> offsets = new ArrayList<>();
    long offset = 0;
    for (PendingTensor t : tensors.values()) {
      header.string(t.name);
      header.u32(t.dims.length);
      for (long d : t.dims) {
        header.count(d);
      }
      header.u32(t.type.code());
      header.u64(offset);
      offsets.add(offset);
      offset = GgufReader.align(offset + t.type.bytesFor(elementCount(t.dims)), alignment);
    }
    header.padTo(alignment);
    try (FileChannel out =
        FileChannel.open(
            path,
            StandardOpenOption.CREATE,
            StandardOpenOption.TRUNCATE_EXISTING,
            StandardOpenOption.WRITE)) {
      writeFully(out, ByteBuffer.wrap(header.bytes()));
      long dataStart = out.position();
      int i = 0;
      for (PendingTensor t : tensors.values()) {
        long at = dataStart + offsets.get(i++);
        long padding = at - out.position();
        writeFully(out, ByteBuffer.allocate(Math.toIntExact(padding)));
        t.bytes.writeTo(out);
      }
    }
  }

  private static long elementCount(long[] dims) {
    long n = 1;
    for (long d : dims) {
      n = Math.multiplyExact(n, d);
    }
    return n;
  }

  private int alignment() {
    GgufValue v = metadata.get(GgufFile.ALIGNMENT_KEY);
    if (v == null) {
      return GgufFile.DEFAULT_ALIGNMENT;
    }
    long a = v.type().isInteger() ? (Long) v.value() : -1;
    if (a <= 0 || a > 1 << 20 || Long.bitCount(a) != 1) {
      throw new IllegalArgumentException(
          GgufFile.ALIGNMENT_KEY + " must be an integer power of two, got " + v);
    }
    return (int) a;
  }

  private static void writeFully(FileChannel out, ByteBuffer buffer) throws IOException {
    while (buffer.hasRemaining()) {
      out.write(buffer);
    }
  }

  /** Little-endian encoding of header fields; version 1 writes counts and lengths as u32. */
  private static final class Encoder {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final int version;

    Encoder(int version) {
      this.version = version;
    }

    void u8(int v) {
      out.write(v);
    }

    void u16(int v) {
      u8(v);
      u8(v >>> 8);
    }

    void u32(int v) {
      u16(v);
      u16(v >>> 16);
    }

    void u64(long v) {
      u32((int) v);
      u32((int) (v >>> 32));
    }

    void count(long v) {
      if (version == 1) {
        if (v < 0 || v > 0xFFFF_FFFFL) {
          throw new IllegalArgumentException("GGUF version 1 cannot hold the count " + v);
        }
        u32((int) v);
      } else {
        u64(v);
      }
    }

    void string(String s) {
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      count(b.length);
      out.writeBytes(b);
    }

    void value(GgufValue v) {
      switch (v.type()) {
        case UINT8, INT8, BOOL ->
            u8(v.value() instanceof Boolean b ? (b ? 1 : 0) : ((Long) v.value()).intValue());
        case UINT16, INT16 -> u16(((Long) v.value()).intValue());
        case UINT32, INT32 -> u32(((Long) v.value()).intValue());
        case UINT64, INT64 -> u64((Long) v.value());
        case FLOAT32 -> u32(Float.floatToRawIntBits((Float) v.value()));
        case FLOAT64 -> u64(Double.doubleToRawLongBits((Double) v.value()));
        case STRING -> string((String) v.value());
        case ARRAY -> array((GgufArray) v.value());
      }
    }

    void array(GgufArray a) {
      u32(a.elementType().code());
      count(a.size());
      Object e = a.elements();
      switch (a.elementType()) {
        case UINT8, INT8 -> out.writeBytes((byte[]) e);
        case UINT16, INT16 -> {
          for (short s : (short[]) e) {
            u16(s);
          }
        }
        case UINT32, INT32 -> {
          for (int i : (int[]) e) {
            u32(i);
          }
        }
        case UINT64, INT64 -> {
          for (long l : (long[]) e) {
            u64(l);
          }
        }
        case FLOAT32 -> {
          for (float f : (float[]) e) {
            u32(Float.floatToRawIntBits(f));
          }
        }
        case FLOAT64 -> {
          for (double d : (double[]) e) {
            u64(Double.doubleToRawLongBits(d));
          }
        }
        case BOOL -> {
          for (boolean b : (boolean[]) e) {
            u8(b ? 1 : 0);
          }
        }
        case STRING -> {
          for (String s : (String[]) e) {
            string(s);
          }
        }
        case ARRAY -> {
          for (GgufArray inner : (GgufArray[]) e) {
            array(inner);
          }
        }
      }
    }

    void padTo(int alignment) {
      while (out.size() % alignment != 0) {
        out.write(0);
      }
    }

    byte[] bytes() {
      return out.toByteArray();
    }
  }
}
