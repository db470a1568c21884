package io.kvtier.model.llama;

import java.util.Arrays;
import java.util.Locale;

/**
 * How a model's K/V rows are stored in kvtier's pages: F32, or F16 (half the bytes per token, so
 * every tier holds twice the tokens; llama.cpp's default cache type). A row is rounded once, when
 * it is written, and attention reads every position back from the pages, so a position's logits
 * are the same bits whether its prefix was computed now or came from any tier (docs/MODELS.md,
 * "KV precision").
 */
public enum KvType {
  /** Four bytes a value: the K/V as computed. */
  F32(Float.BYTES),

  /** Two bytes a value, IEEE 754 binary16 ({@link Float#floatToFloat16}, rounding to nearest). */
  F16(Short.BYTES);

  private final int bytes;

  KvType(int bytes) {
    this.bytes = bytes;
  }

  /** Bytes per stored value ({@code kvtier.dtype-bytes}). */
  public int bytes() {
    return bytes;
  }

  /** The option's spelling: {@code f32}, {@code f16}. */
  public String option() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The type an option names.
   *
   * @param value {@code f32} or {@code f16}, any case
   * @return the type
   * @throws IllegalArgumentException naming the values there are
   */
  public static KvType of(String value) {
    for (KvType t : values()) {
      if (t.option().equalsIgnoreCase(value.strip())) {
        return t;
      }
    }
    throw new IllegalArgumentException(
        "kv-type="
            + value
            + " is not a K/V type kvtier stores; use one of "
            + Arrays.stream(values()).map(KvType::option).toList());
  }

  /** The type whose values take {@code bytes} bytes, as a pool's layout says. */
  static KvType ofBytes(int bytes) {
    for (KvType t : values()) {
      if (t.bytes == bytes) {
        return t;
      }
    }
    throw new IllegalArgumentException(
        "kvtier.dtype-bytes="
            + bytes
            + " is not a K/V type of a GGUF model: 4 (F32) or 2 (F16, kv-type=f16)");
  }

  /**
   * {@code values[from, from + count)} as this type stores them: unchanged for F32, rounded to
   * the nearest F16 value for F16 (what a read of the written row gives back).
   */
  void round(float[] values, int from, int count) {
    if (this == F16) {
      for (int i = from; i < from + count; i++) {
        values[i] = Float.float16ToFloat(Float.floatToFloat16(values[i]));
      }
    }
  }
}
