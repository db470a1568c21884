package io.kvtier.gguf;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A GGUF file (version 1, 2 or 3) mapped read-only into memory. The header, metadata and tensor
 * table are parsed on {@link #open}; tensor data is never copied: {@link #tensor} hands out
 * slices of the mapping, valid until {@link #close}.
 *
 * <p>Typed getters ({@link #getString}, {@link #getInt}, ...) throw a
 * {@link GgufMetadataException} naming the key and the file when the key is missing or holds
 * another type.
 */
public final class GgufFile implements AutoCloseable {
  /** The alignment of the data section when {@code general.alignment} is absent. */
  public static final int DEFAULT_ALIGNMENT = 32;

  /** The metadata key holding the data section's alignment. */
  public static final String ALIGNMENT_KEY = "general.alignment";

  private final Path path;
  private final Arena arena;
  private final MemorySegment mapping;
  private final int version;
  private final Map<String, GgufValue> metadata;
  private final Map<String, GgufTensorInfo> tensors;
  private final long dataStart;
  private final int alignment;

  private GgufFile(Path path, Arena arena, MemorySegment mapping, GgufReader.Parsed parsed) {
    this.path = path;
    this.arena = arena;
    this.mapping = mapping;
    this.version = parsed.version();
    this.metadata = Collections.unmodifiableMap(parsed.metadata());
    this.tensors = Collections.unmodifiableMap(parsed.tensors());
    this.dataStart = parsed.dataStart();
    this.alignment = parsed.alignment();
  }

  /**
   * Maps and parses the file at {@code path}.
   *
   * @throws GgufException if the file is not a readable GGUF file of version 1 to 3
   * @throws IOException if the file cannot be opened or mapped
   */
  public static GgufFile open(Path path) throws IOException {
    Objects.requireNonNull(path, "path");
    Arena arena = Arena.ofShared();
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
      GgufReader.Parsed parsed = new GgufReader(mapping, path.toString()).parse();
      return new GgufFile(path, arena, mapping, parsed);
    } catch (IOException | RuntimeException e) {
      arena.close();
      throw e;
    }
  }

  /** The file's path. */
  public Path path() {
    return path;
  }

  /** The GGUF version, 1 to 3. */
  public int version() {
    return version;
  }

  /** The alignment of the data section and of every tensor's offset. */
  public int alignment() {
    return alignment;
  }

  /** The byte offset in the file where tensor data starts. */
  public long dataStart() {
    return dataStart;
  }

  /** All metadata in file order. */
  public Map<String, GgufValue> metadata() {
    return metadata;
  }

  /** The tensor table in file order. */
  public List<GgufTensorInfo> tensorInfos() {
    return List.copyOf(tensors.values());
  }

  /** Whether a tensor named {@code name} exists. */
  public boolean hasTensor(String name) {
    return tensors.containsKey(name);
  }

  /**
   * The tensor named {@code name}, read in place.
   *
   * @throws GgufException if there is none
   */
  public GgufTensor tensor(String name) {
    GgufTensorInfo info = tensors.get(name);
    if (info == null) {
      throw new GgufException(
          "tensor '" + name + "' is not in " + path + " (" + tensors.size() + " tensors)");
    }
    return new GgufTensor(info, mapping.asSlice(dataStart + info.offset(), info.byteSize()));
  }

  /** The value of {@code key}, if present. */
  public Optional<GgufValue> find(String key) {
    return Optional.ofNullable(metadata.get(key));
  }

  /** Whether {@code key} is present. */
  public boolean has(String key) {
    return metadata.containsKey(key);
  }

  /** The STRING value of {@code key}. */
  public String getString(String key) {
    return (String) require(key, GgufValueType.STRING).value();
  }

  /** The STRING value of {@code key}, or {@code fallback} when absent. */
  public String getString(String key, String fallback) {
    return has(key) ? getString(key) : fallback;
  }

  /** The value of integer key {@code key}, of any integer type, as a long. */
  public long getLong(String key) {
    GgufValue v = require(key);
    if (!v.type().isInteger()) {
      throw wrongType(key, v, "an integer");
    }
    return (Long) v.value();
  }

  /** The value of integer key {@code key}, which must fit an int. */
  public int getInt(String key) {
    long v = getLong(key);
    if (v < Integer.MIN_VALUE
        || v > Integer.MAX_VALUE
        || metadata.get(key).type() == GgufValueType.UINT64 && v < 0) {
      throw new GgufMetadataException(
          key,
          "metadata key '"
              + key
              + "' in "
              + path
              + " holds "
              + Long.toUnsignedString(v)
              + ", which does not fit an int");
    }
    return (int) v;
  }

  /** The integer value of {@code key}, or {@code fallback} when absent. */
  public int getInt(String key, int fallback) {
    return has(key) ? getInt(key) : fallback;
  }

  /** The FLOAT32 or FLOAT64 value of {@code key}, as a float. */
  public float getFloat(String key) {
    GgufValue v = require(key);
    return switch (v.type()) {
      case FLOAT32 -> (Float) v.value();
      case FLOAT64 -> ((Double) v.value()).floatValue();
      default -> throw wrongType(key, v, "FLOAT32 or FLOAT64");
    };
  }

  /** The float value of {@code key}, or {@code fallback} when absent. */
  public float getFloat(String key, float fallback) {
    return has(key) ? getFloat(key) : fallback;
  }

  /** The BOOL value of {@code key}. */
  public boolean getBoolean(String key) {
    return (Boolean) require(key, GgufValueType.BOOL).value();
  }

  /** The BOOL value of {@code key}, or {@code fallback} when absent. */
  public boolean getBoolean(String key, boolean fallback) {
    return has(key) ? getBoolean(key) : fallback;
  }

  /** The ARRAY value of {@code key}. */
  public GgufArray getArray(String key) {
    return (GgufArray) require(key, GgufValueType.ARRAY).value();
  }

  private GgufValue require(String key, GgufValueType type) {
    GgufValue v = require(key);
    if (v.type() != type) {
      throw wrongType(key, v, type.toString());
    }
    return v;
  }

  private GgufValue require(String key) {
    GgufValue v = metadata.get(key);
    if (v == null) {
      throw new GgufMetadataException(key, "metadata key '" + key + "' is missing from " + path);
    }
    return v;
  }

  private GgufMetadataException wrongType(String key, GgufValue v, String wanted) {
    return new GgufMetadataException(
        key, "metadata key '" + key + "' in " + path + " is " + v.type() + ", expected " + wanted);
  }

  /** Unmaps the file; tensor slices handed out before become unusable. */
  @Override
  public void close() {
    arena.close();
  }

  @Override
  public String toString() {
    return "GgufFile["
        + path
        + " v"
        + version
        + ", "
        + metadata.size()
        + " keys, "
        + tensors.size()
        + " tensors]";
  }
}
