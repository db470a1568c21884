package io.kvtier.model.tiny;

import java.util.Objects;

/**
 * The weights of a {@link TinyTransformer}, drawn from the config's seed. Matrices are row-major
 * {@code float[out * in]} so that one output element is one sequential dot product. Immutable
 * after construction and shared by every {@link ForwardPass} of the model.
 */
public final class TinyWeights {
  final ModelConfig config;

  /** Token embeddings, {@code [vocab][d]}. */
  final float[] embedding;

  /** Per layer: RMSNorm gains before attention, {@code [d]}. */
  final float[][] attentionNorm;

  /** Per layer: query, key, value and output projections, {@code [d][d]} each. */
  final float[][] query;

  final float[][] key;
  final float[][] value;
  final float[][] output;

  /** Per layer: RMSNorm gains before the MLP, {@code [d]}. */
  final float[][] mlpNorm;

  /** Per layer: MLP up projection {@code [mlp][d]} and down projection {@code [d][mlp]}. */
  final float[][] up;

  final float[][] down;

  /** The final RMSNorm gains, {@code [d]}. */
  final float[] finalNorm;

  /** The output head, {@code [vocab][d]}, not tied to the embedding. */
  final float[] head;

  /**
   * Per layer: the recurrent state's decay per channel, {@code [d]}, in units of {@code
   * 2^-DECAY_BITS}, in {@code [0.5, 0.97)}; read by recurrent layers only (which take their input
   * and output projections from {@link #value} and {@link #output}).
   */
  final int[][] decay;

  /** Fractional bits of a recurrent layer's decay. */
  static final int DECAY_BITS = 16;

  private TinyWeights(ModelConfig config) {
    this.config = config;
    int d = config.modelDim();
    int layers = config.layers();
    Draw draw = new Draw(config.seed());
    embedding = draw.uniform(config.vocabSize() * d, 1.0f);
    attentionNorm = new float[layers][];
    query = new float[layers][];
    key = new float[layers][];
    value = new float[layers][];
    output = new float[layers][];
    mlpNorm = new float[layers][];
    up = new float[layers][];
    down = new float[layers][];
    // Uniform in [-a, a] has variance a^2/3; a = sqrt(3 / fanIn) keeps activations near unit
    // scale, so that attention is neither uniform nor one-hot and outputs depend on context.
    float projection = (float) Math.sqrt(3.0 / d);
    float downScale = (float) Math.sqrt(3.0 / config.mlpDim());
    for (int l = 0; l < layers; l++) {
      attentionNorm[l] = draw.gains(d);
      query[l] = draw.uniform(d * d, projection * 2.0f);
      key[l] = draw.uniform(d * d, projection * 2.0f);
      value[l] = draw.uniform(d * d, projection);
      output[l] = draw.uniform(d * d, projection * 0.5f);
      mlpNorm[l] = draw.gains(d);
      up[l] = draw.uniform(config.mlpDim() * d, projection);
      down[l] = draw.uniform(d * config.mlpDim(), downScale * 0.5f);
    }
    finalNorm = draw.gains(d);
    head = draw.uniform(config.vocabSize() * d, projection);
    // Drawn last and for every layer, whatever its kind: the weights drawn before are those of a
    // model without layer mixes, and a layer's weights do not depend on the other layers' kinds.
    decay = new int[layers][];
    int low = 1 << (DECAY_BITS - 1);
    int span = (int) (0.97 * (1 << DECAY_BITS)) - low;
    for (int l = 0; l < layers; l++) {
      decay[l] = draw.integers(d, low, span);
    }
  }

  /**
   * Draws the weights of a config from its seed; the same config always gives the same weights.
   *
   * @param config the model's shape and seed
   * @return the weights
   */
  public static TinyWeights random(ModelConfig config) {
    return new TinyWeights(Objects.requireNonNull(config, "config"));
  }

  /**
   * The config the weights were drawn for.
   *
   * @return the config
   */
  public ModelConfig config() {
    return config;
  }

  /** SplitMix64: seeded, fast, and the same sequence on every JVM. */
  private static final class Draw {
    private long state;

    Draw(long seed) {
      state = seed;
    }

    private long next() {
      long z = (state += 0x9E3779B97F4A7C15L);
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      return z ^ (z >>> 31);
    }

    /** Uniform in [-scale, scale). */
    float[] uniform(int n, float scale) {
      float[] out = new float[n];
      for (int i = 0; i < n; i++) {
        float u = (next() >>> 40) * 0x1.0p-24f;
        out[i] = (2.0f * u - 1.0f) * scale;
      }
      return out;
    }

    /** Uniform integers in [low, low + span). */
    int[] integers(int n, int low, int span) {
      int[] out = new int[n];
      for (int i = 0; i < n; i++) {
        out[i] = low + (int) Long.remainderUnsigned(next(), span);
      }
      return out;
    }

    /** Gains near 1, so that norms rescale without erasing their input. */
    float[] gains(int n) {
      float[] out = uniform(n, 0.2f);
      for (int i = 0; i < n; i++) {
        out[i] += 1.0f;
      }
      return out;
    }
  }
}
