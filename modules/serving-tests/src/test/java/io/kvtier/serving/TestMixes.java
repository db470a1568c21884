package io.kvtier.serving;

import io.kvtier.core.config.LayerMix;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.TinyTransformer;

/**
 * The tiny model of a test's layer mix: {@code full,swa:8,recurrent}, or with a {@code /windows}
 * suffix the same mix whose SWA KV the cache keeps as windows in the snapshots (docs/HYBRID.md
 * §4).
 */
final class TestMixes {
  /** The suffix that asks for SWA windows. */
  static final String WINDOWS = "/windows";

  private TestMixes() {}

  /**
   * The model.
   *
   * @param text the mix, with {@link #WINDOWS} for SWA windows
   * @return the default tiny model with that mix
   */
  static TinyTransformer model(String text) {
    boolean windows = text.endsWith(WINDOWS);
    String mix = windows ? text.substring(0, text.length() - WINDOWS.length()) : text;
    return new TinyTransformer(
        ModelConfig.DEFAULTS.withLayerMix(LayerMix.parse(mix, "mix")).withWindowedSwa(windows));
  }
}
