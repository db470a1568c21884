package io.kvtier.gguf;

import java.util.Objects;

/**
 * RoPE scaling from a file's {@code {arch}.rope.scaling.*} keys (or the older
 * {@code {arch}.rope.scale_linear}).
 *
 * @param type {@code none}, {@code linear}, {@code yarn} or another name the file gives
 * @param factor the scaling factor (1 for none)
 * @param originalContextLength the context length the model was trained with, 0 when absent
 */
public record RopeScaling(String type, float factor, int originalContextLength) {
  /** No scaling. */
  public static final RopeScaling NONE = new RopeScaling("none", 1f, 0);

  /** Validates the values. */
  public RopeScaling {
    Objects.requireNonNull(type, "type");
    if (!(factor > 0)) {
      throw new IllegalArgumentException("rope scaling factor must be positive, got " + factor);
    }
    if (originalContextLength < 0) {
      throw new IllegalArgumentException(
          "original context length must be >= 0, got " + originalContextLength);
    }
  }

  static RopeScaling of(GgufFile file, String arch) {
    String prefix = arch + ".rope.";
    if (file.has(prefix + "scaling.type") || file.has(prefix + "scaling.factor")) {
      String type = file.getString(prefix + "scaling.type", "linear");
      float factor = file.getFloat(prefix + "scaling.factor", 1f);
      if (factor == 0f) {
        factor = 1f;
      }
      int original = file.getInt(prefix + "scaling.original_context_length", 0);
      return new RopeScaling(type, factor, original);
    }
    if (file.has(prefix + "scale_linear")) {
      return new RopeScaling("linear", file.getFloat(prefix + "scale_linear"), 0);
    }
    return NONE;
  }
}
