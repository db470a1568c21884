package io.kvtier.model.llama;

/**
 * The working arrays of {@link ShardPass}'s layers and logits, grown to the largest chunk seen
 * and then reused, so that a step allocates nothing in proportion to its positions or context.
 *
 * <p>Why: with fresh arrays per layer, a 470-token prefill of smollm-135m allocated about 10 MB
 * a layer (300 MB a prefill) and each decoded token 28 MB (its K/V read back in every layer);
 * G1 grew the served heap to about 800 MB to absorb that garbage, over issue 30's memory bound
 * (docs/PERFORMANCE.md, "The cache on a real-size model"). Kept, the arrays are a few MB: a
 * chunk of {@link ShardPass#CHUNK} positions, K/V of the context.
 *
 * <p>One per thread that runs passes (a runner has one, {@link LlamaModel#forward} one per
 * call): not thread-safe. A pass's parallel tasks only read its inputs and write disjoint parts
 * of its outputs. The arrays hold the last pass's values, and every pass writes each element it
 * reads: nothing relies on zeros.
 */
final class PassScratch {
  private static final float[] EMPTY = new float[0];

  float[] normed = EMPTY;
  float[] q = EMPTY;
  float[] k = EMPTY;
  float[] v = EMPTY;
  float[] keys = EMPTY;
  float[] values = EMPTY;
  float[] scores = EMPTY;
  float[] attended = EMPTY;
  float[] residual = EMPTY;
  float[] gate = EMPTY;
  float[] up = EMPTY;
  float[] logits = EMPTY;
  float[] partials = EMPTY;
  float[] sentQ = EMPTY;
  float[] chunkQ = EMPTY;

  /** {@code array} if it holds {@code size} floats, else a new one of that size. */
  static float[] atLeast(float[] array, int size) {
    return array.length >= size ? array : new float[size];
  }

  /**
   * {@code array} if it holds exactly {@code size} floats, else a new one: for results whose
   * length is their size (logits handed to a {@link LogitsListener}).
   */
  static float[] exactly(float[] array, int size) {
    return array.length == size ? array : new float[size];
  }
}
