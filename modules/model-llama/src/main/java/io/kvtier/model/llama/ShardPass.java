package io.kvtier.model.llama;

import io.kvtier.gguf.GgufTensor;
import io.kvtier.gguf.ModelHyperparameters;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ForkJoinPool;
import java.util.function.IntFunction;
import java.util.stream.IntStream;

/**
 * One rank's share of a {@link LlamaModel} and the forward pass over it, one layer at a time:
 * what {@link LlamaModel#forward} loops over layers, and what the serving runner steps layer by
 * layer between the engine's calls.
 *
 * <p>Tensor parallelism (Megatron's layout). Rank {@code r} of {@code R} holds query heads and
 * KV heads {@code [r*H/R, (r+1)*H/R)}: their rows of Q, K and V (and biases), their K/V in its
 * store, their attention, and their inner columns of the output projection; and a share of the
 * feed-forward: gate and up rows {@code [f0, f1)} and the same inner columns of down, {@code f0}
 * and {@code f1} on whole blocks of down's type. The two projections' partial outputs are summed
 * over the ranks by {@link PartialSums} in rank order; every rank then continues with the same
 * hidden state, and the final norm and logits are computed whole on every rank. One rank ({@code
 * R = 1}) is the whole model, with {@link LlamaWeight#multiply}.
 *
 * <p>Context parallelism ({@link #striped}): the rank holds the whole weights and the K/V of its
 * {@link Stripe}'s positions only; each query attends over those, and every rank's partial (its
 * largest score, the sum of the exponentials, the weighted values) meets the others' through
 * {@link PartialGather} and is merged in rank order ({@link #merge}). A prefill's rows can be
 * split by position too ({@link #stripedLayer}).
 *
 * <p>Exactness (docs/MODELS.md): each output value of a product is one dot over its inner
 * columns in one order, whatever the number of positions; a position's K/V is written to the
 * store before any position attends and attention reads positions {@code 0..p} back from the
 * store in position order; so a position's bits do not depend on the batch, nor on whether its
 * prefix came from a cache. Immutable: the working arrays are the caller's ({@link PassScratch}).
 */
final class ShardPass {
  /** Below this many multiply-adds attention runs on the calling thread. */
  private static final long PARALLEL_ATTENTION_THRESHOLD = 1L << 16;

  /** Attention tasks per thread of the pool and the caller: a few, so a busy core is no tail. */
  private static final int TASKS_PER_THREAD = 2;

  /**
   * Positions a layer runs at once. Why: the working arrays ({@link PassScratch}) grow to a chunk
   * (smollm-135m: 6 MB at 256 positions, the feed-forward's most) rather than to the longest
   * prompt (a 32K-token prompt of an 8192-wide feed-forward would need 2 GB), and a row of weights
   * is read once per 4 positions whatever the chunk ({@link LlamaWeight}), so nothing slows.
   */
  static final int CHUNK = 256;

  private final LlamaModel model;
  private final ModelHyperparameters shape;
  private final Family family;
  private final PartialSums sums;
  private final boolean whole;
  private final int dim;
  private final int headSize;
  private final int heads;
  private final int firstHead;
  private final int kvHeads;
  private final int firstKvHead;
  private final int qWidth;
  private final int kvWidth;
  private final int ffFirst;
  private final int ffCount;
  private final Optional<float[]>[] bq;
  private final Optional<float[]>[] bk;
  private final Optional<float[]>[] bv;

  /** The positions whose K/V this rank holds: every one, except under context parallelism. */
  private final Stripe stripe;

  /** Under context parallelism, how the ranks' partial attention outputs meet. */
  private final PartialGather gather;

  /**
   * The share of rank {@code rank} of {@code ranks}.
   *
   * @throws IllegalArgumentException if the KV heads do not divide by {@code ranks}, or a
   *     quantized matrix cannot be split on its block boundaries, saying which
   */
  ShardPass(LlamaModel model, int rank, int ranks, PartialSums sums) {
    this(model, rank, ranks, sums, Stripe.WHOLE, (values, length) -> values);
  }

  /**
   * A rank of a context-parallel group: the whole model, the K/V of {@code stripe}'s positions,
   * and each query's attention merged from every rank's partial over its own positions, which
   * {@code gather} brings.
   */
  static ShardPass striped(LlamaModel model, Stripe stripe, PartialGather gather) {
    return new ShardPass(model, 0, 1, PartialSums.WHOLE, stripe, gather);
  }

  @SuppressWarnings("unchecked")
  private ShardPass(
      LlamaModel model,
      int rank,
      int ranks,
      PartialSums sums,
      Stripe stripe,
      PartialGather gather) {
    this.stripe = Objects.requireNonNull(stripe, "stripe");
    this.gather = Objects.requireNonNull(gather, "gather");
    this.model = Objects.requireNonNull(model, "model");
    this.sums = Objects.requireNonNull(sums, "sums");
    this.shape = model.hyperparameters();
    this.family = model.family();
    checkRanks(shape, ranks);
    Objects.checkIndex(rank, ranks);
    this.whole = ranks == 1;
    this.dim = shape.embeddingLength();
    this.headSize = shape.headSize();
    this.kvHeads = shape.headCountKv() / ranks;
    this.firstKvHead = rank * kvHeads;
    this.heads = shape.headCount() / ranks;
    this.firstHead = rank * heads;
    this.qWidth = heads * headSize;
    this.kvWidth = kvHeads * headSize;
    int layers = model.kvBlocks();
    LlamaWeight down = model.layer(0).down();
    int block = down.type().blockSize();
    int blocks = shape.feedForwardLength() / block;
    if (blocks < ranks) {
      throw new IllegalArgumentException(
          "the feed-forward's "
              + shape.feedForwardLength()
              + " rows ("
              + blocks
              + " blocks of "
              + block
              + " weights of "
              + down
              + ") cannot split over "
              + ranks
              + " ranks: use at most "
              + blocks
              + " ranks");
    }
    this.ffFirst = rank * blocks / ranks * block;
    this.ffCount = (rank + 1) * blocks / ranks * block - ffFirst;
    this.bq = new Optional[layers];
    this.bk = new Optional[layers];
    this.bv = new Optional[layers];
    for (int l = 0; l < layers; l++) {
      LlamaModel.Layer layer = model.layer(l);
      layer.wo().checkColumnSplit(firstHead * headSize, qWidth);
      layer.down().checkColumnSplit(ffFirst, ffCount);
      bq[l] = layer.bq().map(b -> slice(b, firstHead * headSize, qWidth));
      bk[l] = layer.bk().map(b -> slice(b, firstKvHead * headSize, kvWidth));
      bv[l] = layer.bv().map(b -> slice(b, firstKvHead * headSize, kvWidth));
    }
  }

  /**
   * Checks that a model's KV heads split evenly over {@code ranks} ranks.
   *
   * @throws IllegalArgumentException naming the heads and the rank counts that work
   */
  static void checkRanks(ModelHyperparameters shape, int ranks) {
    if (ranks < 1 || shape.headCountKv() % ranks != 0) {
      throw new IllegalArgumentException(
          "ranks="
              + ranks
              + " does not divide "
              + shape.name()
              + "'s "
              + shape.headCountKv()
              + " KV heads: each rank holds an equal share of the KV heads; use a divisor of "
              + shape.headCountKv()
              + " (kvtier.ranks)");
    }
  }

  private static float[] slice(float[] v, int from, int length) {
    float[] out = new float[length];
    System.arraycopy(v, from, out, 0, length);
    return out;
  }

  /** Floats of one position's K (or V) row in this share's store. */
  int kvWidth() {
    return kvWidth;
  }

  /**
   * Checks that a store holds this share's K/V rows of every layer.
   *
   * @throws IllegalArgumentException naming both shapes
   */
  void checkStore(KvStore kv) {
    if (kv.layers() != shape.blockCount() || kv.kvDim() != kvWidth) {
      throw new IllegalArgumentException(
          "KV store has layers="
              + kv.layers()
              + " kvDim="
              + kv.kvDim()
              + " but the model needs layers="
              + shape.blockCount()
              + " kvDim="
              + kvWidth);
    }
  }

  /**
   * The embeddings of {@code tokens[from, to)} into {@code x}, one row of {@code dim} per position.
   *
   * @throws IllegalArgumentException for a token outside the vocabulary
   */
  void embed(int[] tokens, int from, int to, float[] x) {
    embed(tokens, from, to, x, 0);
  }

  /** {@link #embed(int[], int, int, float[])} into the rows of {@code x} from {@code row}. */
  void embed(int[] tokens, int from, int to, float[] x, int row) {
    GgufTensor embedding = model.tokenEmbedding();
    long rows = embedding.info().rowCount();
    for (int p = from; p < to; p++) {
      int token = tokens[p];
      if (token < 0 || token >= rows) {
        throw new IllegalArgumentException("token=" + token + " outside the vocabulary of " + rows);
      }
      int at = (row + p - from) * dim;
      embedding.type().dequantize(embedding.data(), (long) token * dim, dim, x, at);
      float scale = family.embeddingScale();
      if (scale > 0) {
        for (int i = 0; i < dim; i++) {
          x[at + i] *= scale;
        }
      }
    }
  }

  /**
   * Runs layer {@code l} over positions {@code start..start+n-1}, whose hidden states are the
   * rows of {@code x} (updated in place): their K/V go to {@code kv}, which holds positions
   * {@code 0..start-1} of this layer already, then each attends over {@code 0..p} read back from
   * {@code kv}. The positions go through in chunks of {@link #CHUNK}, in order.
   */
  void layer(int l, float[] x, int start, int n, KvStore kv, PassScratch s) {
    for (int first = 0; first < n; first += CHUNK) {
      chunk(l, x, first, start + first, Math.min(CHUNK, n - first), kv, s);
    }
  }

  /** Layer {@code l} over positions {@code start..start+n-1}, the rows from {@code row} of x. */
  private void chunk(int l, float[] x, int row, int start, int n, KvStore kv, PassScratch s) {
    int total = start + n;
    project(l, x, row * dim, n, s);
    float[] q = s.q;
    float[] k = s.k;
    int held = stripe.owned(total);
    float[] keys = s.keys = PassScratch.atLeast(s.keys, held * kvWidth);
    float[] values = s.values = PassScratch.atLeast(s.values, held * kvWidth);
    float[] attended = s.attended = PassScratch.atLeast(s.attended, n * qWidth);
    for (int p = 0; p < n; p++) {
      rotate(l, q, p * qWidth, heads, start + p, true);
      rotate(l, k, p * kvWidth, kvHeads, start + p, false);
      if (stripe.owns(start + p)) {
        kv.write(l, start + p, k, s.v, p * kvWidth);
      }
    }
    kv.read(l, firstAttended(l, start), held, keys, values);
    if (stripe.whole()) {
      attend(l, q, keys, values, attended, n, start, s);
    } else {
      float[] partials = s.partials = PassScratch.atLeast(s.partials, n * heads * partialWidth());
      attend(l, q, keys, values, partials, n, start, s);
      merge(gather.gather(partials, n * heads * partialWidth()), n, start, attended, false);
    }
    finish(l, x, row * dim, n, s);
  }

  /**
   * Under context parallelism, layer {@code l} over positions {@code start..start+n-1} with the
   * work split by position: {@code x} holds the rows of this rank's positions among them only,
   * in order (updated in place). Each rank projects its own rows, writes their K/V, and sends
   * their queries to every rank (one gather per chunk); every rank then attends all the chunk's
   * queries over its own positions, the partials meet as in {@link #layer}, and each rank merges
   * and finishes (output projection, feed-forward) its own rows. Each row is the bits that
   * {@link #layer} gives it on every rank: the products take each row on its own, and the
   * attention and merge are the same arithmetic on the same values.
   *
   * @throws IllegalStateException if this pass is not context parallel
   */
  void stripedLayer(int l, float[] x, int start, int n, KvStore kv, PassScratch s) {
    if (stripe.whole()) {
      throw new IllegalStateException("stripedLayer of a pass that holds every position");
    }
    for (int first = 0; first < n; first += CHUNK) {
      int from = start + first;
      stripedChunk(l, x, stripe.owned(start, from), from, Math.min(CHUNK, n - first), kv, s);
    }
  }

  /** {@link #stripedLayer}'s positions {@code start..start+n-1}, own rows from {@code row}. */
  private void stripedChunk(
      int l, float[] x, int row, int start, int n, KvStore kv, PassScratch s) {
    int total = start + n;
    int mine = stripe.owned(start, total);
    int before = stripe.owned(start);
    if (mine > 0) {
      project(l, x, row * dim, mine, s);
      for (int i = 0; i < mine; i++) {
        int p = stripe.position(before + i);
        rotate(l, s.q, i * qWidth, heads, p, true);
        rotate(l, s.k, i * kvWidth, kvHeads, p, false);
        kv.write(l, p, s.k, s.v, i * kvWidth);
      }
    }
    // Every rank's queries of the chunk, each rank's in a slot of the most any rank has.
    int most = 0;
    for (int r = 0; r < stripe.ranks(); r++) {
      most = Math.max(most, stripe.of(r).owned(start, total));
    }
    float[] sent = s.sentQ = PassScratch.atLeast(s.sentQ, most * qWidth);
    System.arraycopy(s.q, 0, sent, 0, mine * qWidth);
    java.util.Arrays.fill(sent, mine * qWidth, most * qWidth, 0f);
    float[] all = gather.gather(sent, most * qWidth);
    float[] q = s.chunkQ = PassScratch.atLeast(s.chunkQ, n * qWidth);
    for (int p = start; p < total; p++) {
      Stripe owner = stripe.of(stripe.owner(p));
      int at = (owner.rank() * most + owner.owned(start, p)) * qWidth;
      System.arraycopy(all, at, q, (p - start) * qWidth, qWidth);
    }
    int held = stripe.owned(total);
    float[] keys = s.keys = PassScratch.atLeast(s.keys, held * kvWidth);
    float[] values = s.values = PassScratch.atLeast(s.values, held * kvWidth);
    kv.read(l, firstAttended(l, start), held, keys, values);
    float[] partials = s.partials = PassScratch.atLeast(s.partials, n * heads * partialWidth());
    attend(l, q, keys, values, partials, n, start, s);
    float[] attended = s.attended = PassScratch.atLeast(s.attended, Math.max(1, mine) * qWidth);
    merge(gather.gather(partials, n * heads * partialWidth()), n, start, attended, true);
    if (mine > 0) {
      finish(l, x, row * dim, mine, s);
    }
  }

  /**
   * Layer {@code l} over one position of each of {@code n} sequences, a batch of decode steps:
   * row {@code p} of {@code x} is the hidden state of position {@code positions[p]} of the
   * sequence whose K/V {@code stores.apply(p)} holds (positions {@code 0..positions[p]-1} of this
   * layer already). Each row's value is the bits {@link #layer} gives for that position alone:
   * the matrix products take each row on its own whatever the batch, and each row attends over
   * its own sequence in the same order; only the weights are read once for all rows, and the
   * partial outputs are summed across ranks in one call.
   */
  void decodeLayer(
      int l, float[] x, int n, int[] positions, IntFunction<KvStore> stores, PassScratch s) {
    project(l, x, 0, n, s);
    float[] q = s.q;
    float[] k = s.k;
    float[] attended = s.attended = PassScratch.atLeast(s.attended, n * qWidth);
    for (int p = 0; p < n; p++) {
      rotate(l, q, p * qWidth, heads, positions[p], true);
      rotate(l, k, p * kvWidth, kvHeads, positions[p], false);
      if (stripe.owns(positions[p])) {
        stores.apply(p).write(l, positions[p], k, s.v, p * kvWidth);
      }
    }
    float[] out = attended;
    if (!stripe.whole()) {
      out = s.partials = PassScratch.atLeast(s.partials, n * heads * partialWidth());
    }
    for (int p = 0; p < n; p++) {
      int count = stripe.owned(positions[p] + 1);
      float[] keys = s.keys = PassScratch.atLeast(s.keys, count * kvWidth);
      float[] values = s.values = PassScratch.atLeast(s.values, count * kvWidth);
      int from = firstAttended(l, positions[p]);
      stores.apply(p).read(l, from, count, keys, values);
      // the heads on the pool's threads once a sequence is long: each head is computed the same
      // way on any thread, with its own row of scores
      long work = (long) heads * (count - from) * headSize;
      int tasks = attentionTasks(work, heads);
      float[] scores = s.scores = PassScratch.atLeast(s.scores, tasks * count);
      float[] o = out;
      int row = p;
      tasks(tasks)
          .forEach(
              task -> {
                for (int h = task; h < heads; h += tasks) {
                  attendHead(q, keys, values, o, row, h, from, count, scores, task * count);
                }
              });
    }
    if (!stripe.whole()) {
      merge(gather.gather(out, n * heads * partialWidth()), n, 0, attended, false);
    }
    finish(l, x, 0, n, s);
  }

  /** The attention norm of rows {@code at..} of x and their q, k, v (biased) into {@code s}. */
  private void project(int l, float[] x, int at, int n, PassScratch s) {
    LlamaModel.Layer layer = model.layer(l);
    float[] xb = s.normed = PassScratch.atLeast(s.normed, n * dim);
    float[] q = s.q = PassScratch.atLeast(s.q, n * qWidth);
    float[] k = s.k = PassScratch.atLeast(s.k, n * kvWidth);
    float[] v = s.v = PassScratch.atLeast(s.v, n * kvWidth);
    for (int p = 0; p < n; p++) {
      Kernels.rmsNorm(
          x, at + p * dim, layer.attentionNorm(), shape.rmsNormEpsilon(), xb, p * dim, dim);
    }
    rows(layer.wq(), xb, n, q, firstHead * headSize, qWidth);
    rows(layer.wk(), xb, n, k, firstKvHead * headSize, kvWidth);
    rows(layer.wv(), xb, n, v, firstKvHead * headSize, kvWidth);
    addBias(bq[l], q, n);
    addBias(bk[l], k, n);
    addBias(bv[l], v, n);
    if (layer.qNorm().isPresent()) {
      headNorms(layer.qNorm().get(), q, n * heads);
      headNorms(layer.kNorm().orElseThrow(), k, n * kvHeads);
    }
  }

  /** RMSNorm of each of the first {@code count} heads of {@code v} in place, with {@code weight}. */
  private void headNorms(float[] weight, float[] v, int count) {
    float eps = shape.rmsNormEpsilon();
    for (int h = 0; h < count; h++) {
      Kernels.rmsNorm(v, h * headSize, weight, eps, v, h * headSize, headSize);
    }
  }

  /**
   * The attention output of {@code s.attended} and the feed-forward, each summed across ranks
   * and added to rows {@code at..} of x.
   */
  private void finish(int l, float[] x, int at, int n, PassScratch s) {
    LlamaModel.Layer layer = model.layer(l);
    float eps = shape.rmsNormEpsilon();
    float[] xb = s.normed;
    float[] attended = s.attended;
    float[] residual = s.residual = PassScratch.atLeast(s.residual, n * dim);
    float[] gate = s.gate = PassScratch.atLeast(s.gate, n * ffCount);
    float[] up = s.up = PassScratch.atLeast(s.up, n * ffCount);
    columns(layer.wo(), attended, n, residual, firstHead * headSize, qWidth);
    sums.sum(residual, n * dim);
    normRows(layer.postAttentionNorm(), residual, n);
    add(x, at, residual, n * dim);
    for (int p = 0; p < n; p++) {
      Kernels.rmsNorm(x, at + p * dim, layer.ffnNorm(), eps, xb, p * dim, dim);
    }
    rows(layer.gate(), xb, n, gate, ffFirst, ffCount);
    rows(layer.up(), xb, n, up, ffFirst, ffCount);
    if (family.gemma()) {
      Kernels.geglu(gate, 0, up, 0, n * ffCount);
    } else {
      Kernels.swiglu(gate, 0, up, 0, n * ffCount);
    }
    columns(layer.down(), gate, n, residual, ffFirst, ffCount);
    sums.sum(residual, n * dim);
    normRows(layer.postFfnNorm(), residual, n);
    add(x, at, residual, n * dim);
  }

  /** Gemma's norm of each of the {@code n} summed rows of {@code v} in place, if it has one. */
  private void normRows(Optional<float[]> norm, float[] v, int n) {
    if (norm.isEmpty()) {
      return;
    }
    float[] weight = norm.get();
    for (int p = 0; p < n; p++) {
      Kernels.rmsNorm(v, p * dim, weight, shape.rmsNormEpsilon(), v, p * dim, dim);
    }
  }

  /**
   * The logits of rows {@code first..first+rows-1} of {@code x} after the last layer: {@code rows
   * * vocabulary} floats, row-major, in an array of exactly that length that {@code s} keeps (the
   * next call overwrites it). Whole on every rank.
   */
  float[] logits(float[] x, int first, int rows, PassScratch s) {
    float[] normed = s.normed = PassScratch.atLeast(s.normed, rows * dim);
    for (int p = 0; p < rows; p++) {
      Kernels.rmsNorm(
          x, (first + p) * dim, model.outputNorm(), shape.rmsNormEpsilon(), normed, p * dim, dim);
    }
    LlamaWeight output = model.output();
    float[] flat = s.logits = PassScratch.exactly(s.logits, rows * output.rows());
    output.multiply(normed, rows, flat);
    float cap = family.finalSoftcap();
    if (cap > 0) {
      Kernels.softcap(flat, 0, flat.length, cap);
    }
    return flat;
  }

  /** This share's rows {@code [first, first+count)} of {@code w} times every column. */
  private void rows(LlamaWeight w, float[] in, int n, float[] out, int first, int count) {
    if (whole) {
      w.multiply(in, n, out);
    } else {
      w.multiplyBlock(in, n, out, first, count, 0, w.columns());
    }
  }

  /** Every row of {@code w} times this share's columns {@code [first, first+count)}. */
  private void columns(LlamaWeight w, float[] in, int n, float[] out, int first, int count) {
    if (whole) {
      w.multiply(in, n, out);
    } else {
      w.multiplyBlock(in, n, out, 0, w.rows(), first, count);
    }
  }

  /**
   * RoPE of {@code count} heads of {@code v} from {@code offset} at {@code position} with layer
   * {@code l}'s base and scaling; a query's heads then times the family's query scale, if any.
   */
  private void rotate(int l, float[] v, int offset, int count, int position, boolean query) {
    float pos = position / family.ropeScale(l);
    float base = family.ropeBase(l);
    for (int h = 0; h < count; h++) {
      Kernels.rope(
          v,
          offset + h * headSize,
          shape.ropeDimensionCount(),
          pos,
          base,
          family.neox(),
          model.ropeFactors());
    }
    float scale = family.queryScale();
    if (query && scale > 0) {
      for (int i = offset; i < offset + count * headSize; i++) {
        v[i] *= scale;
      }
    }
  }

  /**
   * The first of this share's K/V rows that position {@code position} attends to in layer {@code
   * l}: 0, or where the layer's sliding window starts.
   */
  private int firstAttended(int l, int position) {
    int window = family.window(l);
    return window > 0 ? stripe.owned(Math.max(0, position - window + 1)) : 0;
  }

  /**
   * Causal grouped-query attention of each batch position over positions 0..p, in order. The
   * (position, head) pairs are independent and each is computed the same way on any thread, so
   * running them in parallel changes no bit. Each task takes every {@code tasks}-th pair (early
   * and late positions alike, so the tasks' work is even) and its own row of scores.
   */
  private void attend(
      int l,
      float[] q,
      float[] keys,
      float[] values,
      float[] out,
      int n,
      int start,
      PassScratch s) {
    int pairs = n * heads;
    int total = start + n;
    long work = (long) pairs * total * headSize;
    int tasks = attentionTasks(work, pairs);
    float[] scores = s.scores = PassScratch.atLeast(s.scores, tasks * total);
    tasks(tasks)
        .forEach(
            task -> {
              for (int pair = task; pair < pairs; pair += tasks) {
                int p = pair / heads;
                attendHead(
                    q,
                    keys,
                    values,
                    out,
                    p,
                    pair % heads,
                    firstAttended(l, start + p),
                    stripe.owned(start + p + 1),
                    scores,
                    task * total);
              }
            });
  }

  /**
   * How many tasks share attention of {@code work} multiply-adds over {@code units} independent
   * (position, head) pairs: 1 below {@link #PARALLEL_ATTENTION_THRESHOLD}, else a few per thread
   * of the pool and the caller.
   */
  private static int attentionTasks(long work, int units) {
    return work < PARALLEL_ATTENTION_THRESHOLD
        ? 1
        : Math.min(units, TASKS_PER_THREAD * (ForkJoinPool.getCommonPoolParallelism() + 1));
  }

  /** Task numbers {@code 0..tasks-1}, in parallel when more than one. */
  private static IntStream tasks(int tasks) {
    IntStream range = IntStream.range(0, tasks);
    return tasks > 1 ? range.parallel() : range;
  }

  /**
   * Head {@code h} of batch position {@code p} over rows {@code from..count-1} of {@code keys}
   * and {@code values} (all of them but before a sliding window), in order: its output into
   * {@code out}, or under context parallelism its partial ({@link #partialWidth}) over this
   * rank's rows. A query pre-scaled by its family ({@link Family#queryScale}) takes the scores as
   * they are; a soft cap is applied to them before the softmax.
   */
  private void attendHead(
      float[] q,
      float[] keys,
      float[] values,
      float[] out,
      int p,
      int h,
      int from,
      int count,
      float[] scores,
      int so) {
    int group = shape.headCount() / shape.headCountKv();
    float scale = family.queryScale() > 0 ? 1f : (float) (1.0 / Math.sqrt(headSize));
    int qAt = p * qWidth + h * headSize;
    int kvAt = (h / group) * headSize;
    for (int t = from; t < count; t++) {
      scores[so + t] = Kernels.dot(q, qAt, keys, t * kvWidth + kvAt, headSize) * scale;
    }
    float cap = family.attentionSoftcap();
    if (cap > 0) {
      Kernels.softcap(scores, so + from, count - from, cap);
    }
    if (!stripe.whole()) {
      partialHead(values, out, (p * heads + h) * partialWidth(), kvAt, from, count, scores, so);
      return;
    }
    Kernels.softmax(scores, so + from, count - from);
    weightedValues(values, kvAt, from, count, scores, so, out, qAt);
  }

  /**
   * {@code out[at + i] = sum over t in from..count-1, in order, of scores[so + t] * values[t][kvAt
   * + i]}, position by position across the head's values: the bits of that sum taken value by
   * value, with the head's values read in their rows' order (vector lanes, no strided loads).
   */
  private void weightedValues(
      float[] values, int kvAt, int from, int count, float[] scores, int so, float[] out, int at) {
    java.util.Arrays.fill(out, at, at + headSize, 0f);
    for (int t = from; t < count; t++) {
      Kernels.addScaled(out, at, values, t * kvWidth + kvAt, headSize, scores[so + t]);
    }
  }

  /**
   * Floats of one (position, head)'s partial attention under context parallelism: the largest
   * score {@code m} of the rank's rows, the sum {@code s} of their {@code exp(score - m)}, and
   * the {@code headSize} sums of their values weighted so (unnormalized).
   */
  private int partialWidth() {
    return headSize + 2;
  }

  /**
   * The partial of the scores of rows {@code from..count-1} at {@code out[at..]}: {@code m},
   * {@code s}, then the weighted value sums. A rank with no such rows (the query comes before its
   * first position, or its window after its last) gives {@code m = -inf}, {@code s = 0} and
   * zeros, which the merge weighs 0.
   */
  private void partialHead(
      float[] values, float[] out, int at, int kvAt, int from, int count, float[] scores, int so) {
    float max = Float.NEGATIVE_INFINITY;
    for (int t = from; t < count; t++) {
      max = Math.max(max, scores[so + t]);
    }
    float sum = 0f;
    for (int t = from; t < count; t++) {
      float e = (float) Math.exp(scores[so + t] - max);
      scores[so + t] = e;
      sum += e;
    }
    out[at] = max;
    out[at + 1] = sum;
    weightedValues(values, kvAt, from, count, scores, so, out, at + 2);
  }

  /**
   * Merges every rank's partials ({@code all}: rank {@code r}'s {@code n * heads} partials from
   * {@code r * n * heads * partialWidth()}) into each (position, head)'s attention output (with
   * {@code ownRows}, only this rank's positions of {@code start..start+n-1}, into its rows in
   * order), in rank order: with {@code M} the largest {@code m}, the output is {@code sum_r exp(m_r - M) o_r /
   * sum_r exp(m_r - M) s_r}. The same arithmetic on the same bits on every rank.
   */
  private void merge(float[] all, int n, int start, float[] attended, boolean ownRows) {
    int width = partialWidth();
    int rankStride = n * heads * width;
    int ranks = stripe.ranks();
    int before = stripe.owned(start);
    float[] weights = new float[ranks];
    for (int pair = 0; pair < n * heads; pair++) {
      int p = pair / heads;
      if (ownRows && !stripe.owns(start + p)) {
        continue;
      }
      int at = pair * width;
      float max = Float.NEGATIVE_INFINITY;
      for (int r = 0; r < ranks; r++) {
        max = Math.max(max, all[r * rankStride + at]);
      }
      float sum = 0f;
      for (int r = 0; r < ranks; r++) {
        float m = all[r * rankStride + at];
        weights[r] = m == Float.NEGATIVE_INFINITY ? 0f : (float) Math.exp(m - max);
        sum += weights[r] * all[r * rankStride + at + 1];
      }
      float inv = 1f / sum;
      int row = ownRows ? stripe.owned(start + p) - before : p;
      int out = row * qWidth + (pair % heads) * headSize;
      for (int i = 0; i < headSize; i++) {
        float acc = 0f;
        for (int r = 0; r < ranks; r++) {
          acc += weights[r] * all[r * rankStride + at + 2 + i];
        }
        attended[out + i] = acc * inv;
      }
    }
  }

  private static void addBias(Optional<float[]> bias, float[] v, int n) {
    if (bias.isEmpty()) {
      return;
    }
    float[] b = bias.get();
    for (int p = 0; p < n; p++) {
      for (int i = 0; i < b.length; i++) {
        v[p * b.length + i] += b[i];
      }
    }
  }

  private static void add(float[] x, int at, float[] delta, int n) {
    for (int i = 0; i < n; i++) {
      x[at + i] += delta[i];
    }
  }
}
