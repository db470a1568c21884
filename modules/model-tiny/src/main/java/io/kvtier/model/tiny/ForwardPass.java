package io.kvtier.model.tiny;

import io.kvtier.core.config.LayerMix;
import java.util.Arrays;
import java.util.Objects;

/**
 * The workspace of one thread running a {@link TinyTransformer}, or one rank's shard of it:
 * scratch buffers sized once (and grown to the longest chunk seen), so that running the model
 * allocates nothing per token.
 *
 * <p>Design note. A chunk of positions runs layer by layer: for each layer, first every new
 * token's K and V are computed from its own hidden state and written to the {@link KvSequence};
 * then the layer's K and V of every position so far are read back from it; then each new token
 * attends over positions {@code 0..p} in order. Reading back what was just written means the
 * attention of a cached run reads exactly the device pages that later requests will reuse, and
 * running layer-major lets a load-back's layer {@code i} be used while later layers still copy.
 * Dot products use four accumulators summed as {@code (s0 + s1) + (s2 + s3)}: a fixed order, so
 * results are reproducible, with four times the instruction-level parallelism of one chain.
 *
 * <p>Tensor parallelism. A pass may own a contiguous shard of the attention heads (Megatron's
 * layout): it computes Q, K and V of its heads only, keeps only their KV (the shard's vectors are
 * {@code shardHeads * headDim} wide), attends over them, and multiplies the attended vectors by
 * its heads' columns of the output projection. The projection's contribution of each head is
 * rounded to fixed point ({@value #FIXED_POINT_BITS} fractional bits) and summed as a {@code
 * long}; the {@link Combiner} sums those partials over the ranks (a SUM allReduce) and every rank
 * continues with the same hidden state (the MLP and the logits are replicated). Integer sums are
 * exact in any order, so the result is the same bits for 1, 2 or 4 shards and for the reference
 * run without a cache.
 *
 * <p>Layer kinds ({@link LayerMix}). A sliding-window layer attends over the last {@code window}
 * positions of the same KV. A recurrent layer has no KV: its integer state per channel (the
 * shard's channels, in a {@link RecurrentState}) takes in one position after another, and its
 * output goes through the same fixed-point projection and sum as attention's. A run may start
 * before the positions it writes ({@code writeFrom}): those positions read their KV, which is how
 * a recurrent state is rebuilt over a cached prefix without rewriting its pages.
 */
public final class ForwardPass {
  private static final float NORM_EPSILON = 1e-5f;

  /** Fractional bits of a head's fixed-point contribution: 2^-24 is below fp32's resolution. */
  static final int FIXED_POINT_BITS = 24;

  private static final double FIXED_SCALE = (double) (1L << FIXED_POINT_BITS);

  /**
   * Beyond this (2^32) a head's contribution is not a number a tiny model produces, and the sum
   * of many such could wrap a {@code long}.
   */
  private static final double FIXED_LIMIT = (double) (1L << 32);

  /**
   * Sums one layer's fixed-point partial outputs over the ranks of a tensor-parallel group, in
   * place: afterwards every rank holds the same sums.
   */
  @FunctionalInterface
  public interface Combiner {
    /** The combiner of a pass that owns every head: the partials are the sums already. */
    Combiner WHOLE = (values, length) -> {};

    /**
     * Replaces {@code values[0, length)} by their sums over the ranks.
     *
     * @param values this rank's partials
     * @param length how many are valid
     */
    void sum(long[] values, int length);
  }

  private final TinyTransformer model;
  private final TinyWeights w;
  private final int d;
  private final int heads;
  private final int firstHead;
  private final int shard;
  private final int headDim;
  private final int mlpDim;
  private final float attentionScale;
  private float[] hidden = new float[0];
  private float[] query = new float[0];
  private final float[] normed;
  private final float[] key;
  private final float[] value;
  private final float[] attended;
  private final float[] projected;
  private final float[] mlp;
  private final float[] logits;
  private final float[] keys;
  private final float[] values;
  private final float[] scores;
  private final Combiner combiner;
  private long[] partials = new long[0];
  private final RecurrentState sequence;

  ForwardPass(TinyTransformer model) {
    this(model, 0, 1, Combiner.WHOLE);
  }

  /**
   * A pass over one rank's shard of the heads.
   *
   * @param model the model
   * @param rank the rank, which owns heads {@code [rank * heads / ranks, (rank + 1) * heads /
   *     ranks)}
   * @param ranks the shards, dividing the head count
   * @param combiner sums the partial outputs over the ranks
   */
  ForwardPass(TinyTransformer model, int rank, int ranks, Combiner combiner) {
    this.model = model;
    this.w = model.weights;
    this.combiner = Objects.requireNonNull(combiner, "combiner");
    ModelConfig c = model.config;
    c.checkShards(ranks);
    Objects.checkIndex(rank, ranks);
    d = c.modelDim();
    heads = c.heads();
    shard = heads / ranks;
    firstHead = rank * shard;
    headDim = c.headDim();
    mlpDim = c.mlpDim();
    int sd = shard * headDim;
    attentionScale = (float) (1.0 / Math.sqrt(headDim));
    normed = new float[d];
    key = new float[sd];
    value = new float[sd];
    attended = new float[sd];
    projected = new float[d];
    mlp = new float[mlpDim];
    logits = new float[c.vocabSize()];
    keys = new float[c.maxContext() * sd];
    values = new float[c.maxContext() * sd];
    scores = new float[c.maxContext()];
    sequence = newState();
  }

  /**
   * A recurrent state at position 0 for this pass's shard, for a sequence that this pass runs
   * with {@link #run}.
   */
  RecurrentState newState() {
    return new RecurrentState(model.config.layerMix(), shard * headDim);
  }

  /**
   * Runs positions {@code [from, to)} of a sequence, writing their K and V to {@code kv}, and
   * returns the greedy next token after position {@code to - 1}. Positions {@code [0, from)} must
   * already be in {@code kv} (computed earlier or cached). A model with recurrent layers keeps
   * their state in this pass between calls: {@code from = 0} starts a new sequence, and any other
   * {@code from} must be where the previous call ended.
   *
   * @param tokens the sequence's tokens; position {@code p} is {@code tokens[p]}
   * @param from the first position to compute
   * @param to one past the last position to compute, {@code from < to <= maxContext}
   * @param kv where the sequence's KV lives
   * @param gate waited on before each layer reads {@code kv}
   * @return the argmax of the logits after position {@code to - 1}, the lowest id on ties
   * @throws InterruptedException if interrupted while waiting on the gate
   * @throws IllegalStateException if a recurrent layer's state is not at {@code from}
   */
  public int forward(int[] tokens, int from, int to, KvSequence kv, LayerGate gate)
      throws InterruptedException {
    if (from == 0) {
      sequence.reset();
    }
    return run(tokens, from, from, to, kv, sequence, gate);
  }

  /**
   * Runs positions {@code [start, to)} through every layer and returns the greedy next token after
   * {@code to - 1}; only positions from {@code writeFrom} on write their K and V, those before
   * read theirs from {@code kv} (how a cached prefix is recomputed to rebuild a recurrent state
   * without rewriting pages that other requests share).
   *
   * @param state the recurrent state, at {@code start}; at {@code to} afterwards
   */
  int run(
      int[] tokens,
      int start,
      int writeFrom,
      int to,
      KvSequence kv,
      RecurrentState state,
      LayerGate gate)
      throws InterruptedException {
    Objects.requireNonNull(gate, "gate");
    int count = checkRange(tokens, start, to);
    if (hidden.length < count * d) {
      hidden = new float[count * d];
    }
    embed(tokens, start, to, hidden);
    for (int layer = 0; layer < model.config.layers(); layer++) {
      gate.awaitLayer(layer);
      layer(layer, start, to, hidden, kv, writeFrom, state);
    }
    return next(hidden, count - 1);
  }

  /**
   * The greedy next token after position {@code position}, whose KV and that of every earlier
   * position is already in {@code kv}: recomputes that position's hidden state reading the KV,
   * writing nothing. This is how a request whose whole prompt was cached gets its first token.
   * With recurrent layers, whose state before {@code position} the KV does not give, every
   * position is recomputed from 0 (reading the KV, writing nothing).
   *
   * @param tokens the sequence's tokens
   * @param position the last known position
   * @param kv where positions {@code [0, position]} have their KV
   * @return the next token
   */
  public int nextAfterCached(int[] tokens, int position, KvSequence kv) {
    sequence.reset();
    int start = model.config.needsSnapshots() ? 0 : position;
    try {
      return run(tokens, start, position + 1, position + 1, kv, sequence, LayerGate.OPEN);
    } catch (InterruptedException e) {
      // The open gate never waits; keep the flag for the caller.
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while recomputing a cached position", e);
    }
  }

  private int checkRange(int[] tokens, int from, int to) {
    Objects.requireNonNull(tokens, "tokens");
    if (from < 0 || from >= to || to > tokens.length || to > model.config.maxContext()) {
      throw new IndexOutOfBoundsException(
          "positions ["
              + from
              + ", "
              + to
              + ") of a sequence of "
              + tokens.length
              + " tokens: need 0 <= from < to <= min(tokens.length, maxContext="
              + model.config.maxContext()
              + ")");
    }
    return to - from;
  }

  /** Writes the embeddings of positions {@code [from, to)} into rows of {@code out}. */
  void embed(int[] tokens, int from, int to, float[] out) {
    int vocab = model.config.vocabSize();
    for (int i = 0; i < to - from; i++) {
      int token = tokens[from + i];
      if (token < 0 || token >= vocab) {
        throw new IllegalArgumentException(
            "token "
                + token
                + " at position "
                + (from + i)
                + " is outside the vocabulary [0, "
                + vocab
                + ")");
      }
      System.arraycopy(w.embedding, token * d, out, i * d, d);
    }
  }

  /**
   * Runs one layer over positions {@code [from, to)} whose hidden states are the rows of {@code
   * h}, updating them in place.
   *
   * @param writeFrom positions from here on write their K and V to {@code kv}; those before have
   *     theirs there already (a cached position recomputed, its KV read, never rewritten)
   * @param state the recurrent state, which a recurrent layer takes from {@code from} to {@code
   *     to}; unused by attention layers
   */
  void layer(
      int layer, int from, int to, float[] h, KvSequence kv, int writeFrom, RecurrentState state) {
    Objects.requireNonNull(kv, "kv");
    int count = to - from;
    if (partials.length < count * d) {
      partials = new long[count * d];
    }
    LayerMix.Layer kind = model.config.layerMix().layer(layer);
    if (kind.hasKv()) {
      attention(layer, from, to, h, kv, writeFrom, kind.window());
    } else {
      recurrent(layer, from, to, h, state);
    }
    combiner.sum(partials, count * d);
    for (int i = 0; i < count; i++) {
      for (int r = 0; r < d; r++) {
        h[i * d + r] += (float) (partials[i * d + r] / FIXED_SCALE);
      }
      rmsNorm(h, i * d, w.mlpNorm[layer], normed);
      matVec(w.up[layer], 0, normed, mlpDim, d, mlp, 0);
      for (int j = 0; j < mlpDim; j++) {
        mlp[j] = Math.max(mlp[j], 0.0f);
      }
      matVec(w.down[layer], 0, mlp, d, mlpDim, projected, 0);
      addInto(h, i * d, projected);
    }
  }

  /** Full ({@code window} 0) or sliding-window attention of the shard's heads, into partials. */
  private void attention(
      int layer, int from, int to, float[] h, KvSequence kv, int writeFrom, int window) {
    int count = to - from;
    int sd = shard * headDim;
    int rows = firstHead * headDim;
    if (query.length < count * sd) {
      query = new float[count * sd];
    }
    boolean recompute = kv.recomputes(layer);
    for (int i = 0; i < count; i++) {
      int position = from + i;
      rmsNorm(h, i * d, w.attentionNorm[layer], normed);
      matVec(w.query[layer], rows, normed, sd, d, query, i * sd);
      rotate(query, i * sd, position);
      if (position >= writeFrom || recompute) {
        matVec(w.key[layer], rows, normed, sd, d, key, 0);
        matVec(w.value[layer], rows, normed, sd, d, value, 0);
        rotate(key, 0, position);
        kv.write(layer, position, key, 0, value, 0);
      }
    }
    kv.read(layer, to, keys, values);
    for (int i = 0; i < count; i++) {
      int position = from + i;
      attend(i * sd, position, window == 0 ? 0 : Math.max(0, position - window + 1));
      project(w.output[layer], i * d);
    }
  }

  /**
   * The recurrent layer of the shard's channels: per token, {@code u = V . norm(h)} and, per
   * channel, {@code s = (s * decay) >> 16 + round(u * 2^24)} in integers, so that the state is
   * the same bits however the positions were split into steps and whichever rank holds the
   * channel; the layer's output is the output projection of {@code s * (1 - decay)} (the state at
   * unit scale), summed over the ranks like attention's.
   */
  private void recurrent(int layer, int from, int to, float[] h, RecurrentState state) {
    Objects.requireNonNull(state, "state");
    int sd = shard * headDim;
    int rows = firstHead * headDim;
    int[] decay = w.decay[layer];
    long[] s = state.advance(layer, from, to);
    double one = 1 << TinyWeights.DECAY_BITS;
    for (int i = 0; i < to - from; i++) {
      rmsNorm(h, i * d, w.attentionNorm[layer], normed);
      matVec(w.value[layer], rows, normed, sd, d, value, 0);
      for (int c = 0; c < sd; c++) {
        int a = decay[rows + c];
        s[c] = ((s[c] * a) >> TinyWeights.DECAY_BITS) + Math.round(value[c] * FIXED_SCALE);
        attended[c] = (float) (s[c] * ((one - a) / one) / FIXED_SCALE);
      }
      state.afterPosition(layer, from + i + 1, s);
      project(w.output[layer], i * d);
    }
  }

  /**
   * This shard's part of the output projection of the attended vector, into {@code
   * partials[at, at + d)}: each head's contribution rounded to fixed point on its own, so that
   * the sum does not depend on how the heads are split.
   */
  private void project(float[] output, int at) {
    for (int r = 0; r < d; r++) {
      long sum = 0;
      for (int local = 0; local < shard; local++) {
        float x =
            dot(output, r * d + (firstHead + local) * headDim, attended, local * headDim, headDim);
        double scaled = x * FIXED_SCALE;
        if (!(Math.abs(scaled) < FIXED_LIMIT * FIXED_SCALE)) {
          throw new IllegalStateException(
              "head "
                  + (firstHead + local)
                  + " contributes "
                  + x
                  + " to the attention output: beyond the fixed-point range of +-2^32; the"
                  + " model's weights are not a tiny transformer's");
        }
        sum += Math.round(scaled);
      }
      partials[at + r] = sum;
    }
  }

  /** The logits of the last {@link #next} (the pass's own array, rewritten by the next call). */
  float[] lastLogits() {
    return logits;
  }

  /** The argmax of the logits of row {@code row} of {@code h}, the lowest id on ties. */
  int next(float[] h, int row) {
    int vocab = model.config.vocabSize();
    rmsNorm(h, row * d, w.finalNorm, normed);
    matVec(w.head, 0, normed, vocab, d, logits, 0);
    int best = 0;
    for (int t = 1; t < vocab; t++) {
      if (logits[t] > logits[best]) {
        best = t;
      }
    }
    return best;
  }

  /**
   * Causal attention of the shard's query at {@code q} (position {@code position}) over
   * positions {@code [first, position]} into attended.
   */
  private void attend(int q, int position, int first) {
    Arrays.fill(attended, 0.0f);
    int sd = shard * headDim;
    for (int h = 0; h < shard; h++) {
      int base = h * headDim;
      float max = Float.NEGATIVE_INFINITY;
      for (int p = first; p <= position; p++) {
        float s = dot(query, q + base, keys, p * sd + base, headDim) * attentionScale;
        scores[p] = s;
        max = Math.max(max, s);
      }
      float sum = 0.0f;
      for (int p = first; p <= position; p++) {
        // StrictMath: the same bits on every JIT tier, or cached and uncached runs could differ.
        float e = (float) StrictMath.exp(scores[p] - max);
        scores[p] = e;
        sum += e;
      }
      float inverse = 1.0f / sum;
      for (int p = first; p <= position; p++) {
        float weight = scores[p] * inverse;
        int v = p * sd + base;
        for (int e = 0; e < headDim; e++) {
          attended[base + e] += weight * values[v + e];
        }
      }
    }
  }

  /** Rotary position embedding of each of the shard's heads of the vector at {@code offset}. */
  private void rotate(float[] vector, int offset, int position) {
    int half = headDim / 2;
    int table = position * half;
    for (int h = 0; h < shard; h++) {
      int base = offset + h * headDim;
      for (int i = 0; i < half; i++) {
        float c = model.cos[table + i];
        float s = model.sin[table + i];
        float a = vector[base + 2 * i];
        float b = vector[base + 2 * i + 1];
        vector[base + 2 * i] = a * c - b * s;
        vector[base + 2 * i + 1] = a * s + b * c;
      }
    }
  }

  private void rmsNorm(float[] x, int offset, float[] gain, float[] out) {
    float squares = dot(x, offset, x, offset, d);
    float scale = (float) (1.0 / Math.sqrt(squares / d + NORM_EPSILON));
    for (int i = 0; i < d; i++) {
      out[i] = x[offset + i] * scale * gain[i];
    }
  }

  private static void addInto(float[] x, int offset, float[] delta) {
    for (int i = 0; i < delta.length; i++) {
      x[offset + i] += delta[i];
    }
  }

  /**
   * {@code out[outOffset + r] = W[firstRow + r] . x} for {@code rows} rows of a row-major matrix
   * of {@code cols} columns.
   */
  private static void matVec(
      float[] matrix, int firstRow, float[] x, int rows, int cols, float[] out, int outOffset) {
    for (int r = 0; r < rows; r++) {
      out[outOffset + r] = dot(matrix, (firstRow + r) * cols, x, 0, cols);
    }
  }

  private static float dot(float[] a, int aOffset, float[] b, int bOffset, int n) {
    float s0 = 0.0f;
    float s1 = 0.0f;
    float s2 = 0.0f;
    float s3 = 0.0f;
    int i = 0;
    for (; i + 3 < n; i += 4) {
      s0 += a[aOffset + i] * b[bOffset + i];
      s1 += a[aOffset + i + 1] * b[bOffset + i + 1];
      s2 += a[aOffset + i + 2] * b[bOffset + i + 2];
      s3 += a[aOffset + i + 3] * b[bOffset + i + 3];
    }
    for (; i < n; i++) {
      s0 += a[aOffset + i] * b[bOffset + i];
    }
    return (s0 + s1) + (s2 + s3);
  }
}
