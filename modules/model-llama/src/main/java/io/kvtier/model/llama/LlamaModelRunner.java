package io.kvtier.model.llama;

import io.kvtier.core.config.Parallelism;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.core.rank.Sampler;
import io.kvtier.spi.Collective;
import io.kvtier.spi.PageMemory;
import io.kvtier.spi.ReduceOp;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A {@link LlamaServingModel} as the {@link ModelRunner} of one rank: per request and step, layer
 * 0 embeds the step's tokens {@code [from, to)}, each {@link #writeLayer} runs one layer over
 * them (their K/V into the request's pages, attention over positions {@code 0..to-1} read back
 * from the pages in order), and {@link #nextToken} takes the last position's logits and their
 * argmax (ties to the lowest id), or for a request that samples the {@link Sampler}'s token at
 * that position ({@link #samples()}). The hidden states of a step in progress live here, per
 * request, until {@link #released}.
 *
 * <p>In a group of {@code R} ranks this rank holds its share of the heads and feed-forward rows
 * (see {@link ShardPass}); each layer's two partial outputs are summed over the group through the
 * engine's collective ({@link #combineThrough}): one SUM allReduce of {@code R} slots in which
 * each rank fills its own with its floats' bits and leaves the others 0, so that every rank gets
 * every rank's partials unchanged and adds them in rank order. The sums are then the same bits on
 * every rank, and the tokens too, as the engine's replicated state needs.
 *
 * <p>Under context parallelism ({@link Parallelism}, {@code kvtier.parallel=cp}) the rank holds
 * the whole weights and the K/V of its positions ({@link Stripe}); the ranks' partial attention
 * outputs meet through the same collective, every rank's bits in rank order, and each merges
 * them alike. A prefill's rows are split by position: each rank computes its own positions'
 * rows, the chunk's queries and the last hidden row travel through the collective ({@link
 * ShardPass#stripedLayer}). A decode step is computed by every rank.
 *
 * <p>{@link #verifyPrefix} recomputes a loaded-back prefix from its tokens and compares its K/V
 * with the pages bit for bit. Not thread-safe: one per rank, on the rank's scheduler thread;
 * its requests' steps share one set of working arrays ({@link PassScratch}), which a rank's
 * one-call-at-a-time schedule allows.
 */
public final class LlamaModelRunner implements ModelRunner {
  /** Tag of the allReduce that sums a layer's partial outputs. */
  public static final String COMBINE_TAG = "tp";

  private final LlamaModel model;
  private final int rank;
  private final int ranks;
  private final Parallelism parallelism;
  private final Stripe stripe;
  private final ShardPass pass;
  private final PagedKvStore kv;
  private final LogitsListener listener;
  private final int dim;
  private final Map<Long, Step> steps = new HashMap<>();
  private final PassScratch scratch = new PassScratch();
  private final OneLayer reference;
  private float[] verifyHidden = new float[0];
  private float[] pageKeys = new float[0];
  private float[] pageValues = new float[0];
  private long[] slots = new long[0];
  private PartialSums sums;
  private PartialGather gather;
  private boolean replicatedPrefill;
  private float[] gathered = new float[0];

  /** The decode batch in progress ({@link #writeDecodeLayer}): its hidden rows and positions. */
  private float[] batchHidden = new float[0];

  private int[] batchPositions = new int[0];
  private int batchSize;

  /** The batch's next layer; {@code -1} when no batch is in progress. */
  private int batchLayer = -1;

  /** One request's step in progress. */
  private static final class Step {
    int from;
    int to;
    int nextLayer;
    float[] hidden = new float[0];
  }

  /**
   * The runner of rank {@code rank} of {@code ranks}. With more than one rank, call {@link
   * #combineThrough} before the first step.
   *
   * @param model the model
   * @param device the rank's device pool, with the share's KV layout
   * @param rank the rank
   * @param ranks the ranks, dividing the model's KV heads
   * @param listener gets each generated token's logits
   * @throws IllegalArgumentException if the ranks do not divide the KV heads, a matrix cannot
   *     split, or the pool's layout is not the share's
   */
  public LlamaModelRunner(
      LlamaServingModel model, PageMemory device, int rank, int ranks, LogitsListener listener) {
    this(model, device, rank, ranks, Parallelism.TP, listener);
  }

  /**
   * The runner of rank {@code rank} of {@code ranks}, the model split as {@code parallelism}
   * says: under tp a share of the heads and feed-forward rows; under cp the whole weights and
   * the K/V of the rank's positions ({@link Stripe}). With more than one rank, call {@link
   * #combineThrough} before the first step.
   *
   * @param model the model
   * @param device the rank's device pool, with the rank's KV layout ({@link PagedKvStore#layout(
   *     io.kvtier.gguf.ModelHyperparameters, int, int, Parallelism, KvType)})
   * @param rank the rank
   * @param ranks the ranks
   * @param parallelism tp or cp
   * @param listener gets each generated token's logits
   * @throws IllegalArgumentException if the ranks cannot split the model so, or the pool's
   *     layout is not the rank's
   */
  public LlamaModelRunner(
      LlamaServingModel model,
      PageMemory device,
      int rank,
      int ranks,
      Parallelism parallelism,
      LogitsListener listener) {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(device, "device");
    this.listener = Objects.requireNonNull(listener, "listener");
    this.parallelism = Objects.requireNonNull(parallelism, "parallelism");
    this.model = model.model();
    this.rank = rank;
    this.ranks = ranks;
    Objects.checkIndex(rank, ranks);
    this.draftModel = model.draftModel();
    this.draftCapacity = model.maxContext();
    if ((this.model.hasDraft() || draftModel != null) && parallelism.cp() && ranks > 1) {
      model.checkNotContextParallel(ranks);
    }
    this.speculativeTokens = model.speculativeTokens();
    this.draftBlock = this.model.hasDraft() ? this.model.blockCount() : -1;
    this.kv =
        new PagedKvStore(device, this.model.kvShape(), rank, ranks, parallelism, model.kvType());
    this.stripe = kv.stripe();
    this.sums =
        ranks == 1
            ? PartialSums.WHOLE
            : (values, length) -> {
              throw notJoined();
            };
    this.gather =
        (values, length) -> {
          throw notJoined();
        };
    if (stripe.whole()) {
      ShardPass.checkRanks(this.model.hyperparameters(), ranks);
      this.pass =
          new ShardPass(this.model, rank, ranks, (values, length) -> sums.sum(values, length));
    } else {
      this.pass =
          ShardPass.striped(this.model, stripe, (values, length) -> gather.gather(values, length));
    }
    this.dim = this.model.hyperparameters().embeddingLength();
    this.reference = new OneLayer(this.model.kvBlocks(), pass.kvWidth(), stripe, model.kvType());
  }

  /** Tokens the draft proposes per decode step; 0 without a draft. */
  private final int speculativeTokens;

  /** A separate draft model, whole on every rank, or null. */
  private final LlamaModel draftModel;

  /** Positions of a request's draft K/V arrays: the target's context. */
  private final int draftCapacity;

  /** Per request, the separate draft's K/V and the tokens it holds them for. */
  private final Map<Long, DraftState> drafts = new HashMap<>();

  private static final class DraftState {
    final KvStore kv;
    int[] tokens = new int[0];
    int computed;

    DraftState(KvStore kv) {
      this.kv = kv;
    }
  }

  /** The draft layer's block of the pages (after the target's layers), or -1 without one. */
  private final int draftBlock;

  /** The draft layer's rows of the step in progress: layer {@code L-1}'s input, copied. */
  private float[] draftHidden = new float[0];

  /**
   * Testing only: the broken tier of docs/MODELS.md's speculative decoding, which restores a
   * prefix without its draft block (as a tier that keeps only the target's layers would): {@link
   * #verifyPrefix}, which the engine calls for a loaded-back prefix, zeroes the draft block of its
   * pages.
   */
  boolean dropDraftBlockOnRestore;

  /** Whether a prefill's rows are split by position over the ranks (cp, unless replicated). */
  private boolean split() {
    return !stripe.whole() && !replicatedPrefill;
  }

  /**
   * Under cp, has every rank compute every row of a prefill (as a decode step does), writing
   * only its own positions' K/V: the bits of the split prefill, at {@code R} times the work. For
   * the tests that show the two equal.
   */
  void replicatePrefill() {
    replicatedPrefill = true;
  }

  private IllegalStateException notJoined() {
    return new IllegalStateException(
        "rank "
            + rank
            + " of "
            + ranks
            + " has no collective to "
            + (stripe.whole() ? "sum its partial outputs" : "merge its partial attention")
            + ": call combineThrough before the first step");
  }

  /** How this runner's group splits the model. */
  public Parallelism parallelism() {
    return parallelism;
  }

  /**
   * Sums each layer's partial outputs over the group through {@code collective} (a SUM allReduce
   * tagged {@value #COMBINE_TAG}, which every rank makes at the same point of the same step). Use
   * the engine's collective, so that the calls join its schedule and a rank that fails stops the
   * others at that call. A group of one needs none.
   *
   * @param collective the rank group, of this runner's size, as this rank
   * @throws IllegalArgumentException if the group's size or rank differ from the runner's
   */
  public void combineThrough(Collective collective) {
    Objects.requireNonNull(collective, "collective");
    if (collective.size() != ranks || collective.rank() != rank) {
      throw new IllegalArgumentException(
          "the collective is rank "
              + collective.rank()
              + " of "
              + collective.size()
              + " but this runner is rank "
              + rank
              + " of "
              + ranks
              + ": give each rank's runner its own handle on the group");
    }
    if (ranks > 1) {
      sums = (values, length) -> sumInRankOrder(collective, values, length);
      gather = (values, length) -> gatherInRankOrder(collective, values, length);
    }
  }

  /** Every rank's {@code values[0, length)}, unchanged, in rank order (one allReduce). */
  private float[] gatherInRankOrder(Collective collective, float[] values, int length) {
    exchange(collective, values, length);
    gathered = PassScratch.atLeast(gathered, ranks * length);
    for (int i = 0; i < ranks * length; i++) {
      gathered[i] = Float.intBitsToFloat((int) slots[i]);
    }
    return gathered;
  }

  /**
   * Leaves every rank's {@code values[0, length)} in {@code slots}, rank {@code r}'s bits from
   * {@code r * length}: one SUM allReduce in which each rank fills its own slots and leaves the
   * others 0, so that the sums are every rank's bits unchanged.
   */
  private void exchange(Collective collective, float[] values, int length) {
    // The message is the whole array: reused while the length repeats (every decode step, every
    // whole chunk of a prefill).
    if (slots.length != ranks * length) {
      slots = new long[ranks * length];
    } else {
      Arrays.fill(slots, 0L);
    }
    int mine = rank * length;
    for (int i = 0; i < length; i++) {
      slots[mine + i] = Float.floatToRawIntBits(values[i]) & 0xFFFF_FFFFL;
    }
    // Adding zeros to the other ranks' slots leaves their bits as they were sent.
    collective.allReduceInto(ReduceOp.SUM, slots, slots, COMBINE_TAG);
  }

  private void sumInRankOrder(Collective collective, float[] values, int length) {
    exchange(collective, values, length);
    for (int i = 0; i < length; i++) {
      float sum = Float.intBitsToFloat((int) slots[i]);
      for (int r = 1; r < ranks; r++) {
        sum += Float.intBitsToFloat((int) slots[r * length + i]);
      }
      values[i] = sum;
    }
  }

  @Override
  public int layers() {
    return model.hyperparameters().blockCount();
  }

  @Override
  public void writeLayer(ModelStep step, int layer) {
    if (step.to() == step.from()) {
      return;
    }
    Step s = steps.computeIfAbsent(step.requestId(), id -> new Step());
    if (layer == 0) {
      s.from = step.from();
      s.to = step.to();
      s.nextLayer = 0;
      int rows = split() ? stripe.owned(step.from(), step.to()) : step.to() - step.from();
      int size = rows * dim;
      if (s.hidden.length < size) {
        s.hidden = new float[size];
      }
      embedOwn(step.tokens(), step.from(), step.to(), s.hidden);
    }
    if (s.from != step.from() || s.to != step.to() || s.nextLayer != layer) {
      throw new IllegalStateException(
          "request id="
              + step.requestId()
              + ": layer "
              + layer
              + " of positions ["
              + step.from()
              + ", "
              + step.to()
              + ") but the step in progress is ["
              + s.from
              + ", "
              + s.to
              + ") at layer "
              + s.nextLayer
              + ": call writeLayer for layers 0.."
              + (layers() - 1)
              + " in order");
    }
    kv.bind(step.pageTable(), step.pageTable().length);
    int n = step.to() - step.from();
    if (layer == draftBlock - 1) {
      // The draft layer reads what the target's last layer reads, and writes its own block.
      draftHidden = PassScratch.atLeast(draftHidden, n * dim);
      System.arraycopy(s.hidden, 0, draftHidden, 0, n * dim);
      layer(draftBlock, draftHidden, step.from(), n, kv);
    }
    layer(layer, s.hidden, step.from(), n, kv);
    s.nextLayer++;
  }

  @Override
  public int speculativeTokens() {
    return speculativeTokens;
  }

  @Override
  public int pageBlocks() {
    return model.kvBlocks();
  }

  /**
   * {@inheritDoc}
   *
   * <p>The draft is the target's layers but the last, then the draft layer (block {@code L} of
   * the pages) in place of the last, then the target's norm and output: position by position
   * from the step's, each one's K/V written to the request's pages (past its computed length)
   * and its greedy token the next position's input.
   */
  @Override
  public void propose(ModelStep step, int count, int[] proposals) {
    if (draftModel != null) {
      proposeWithModel(step, count, proposals);
      return;
    }
    if (draftBlock < 0) {
      throw new UnsupportedOperationException(model + " has no draft");
    }
    kv.bind(step.pageTable(), step.pageTable().length);
    float[] x = draftHidden = PassScratch.atLeast(draftHidden, dim);
    int[] token = {step.tokens()[step.from()]};
    for (int i = 0; i < count; i++) {
      int position = step.from() + i;
      pass.embed(token, 0, 1, x);
      for (int l = 0; l < draftBlock - 1; l++) {
        pass.layer(l, x, position, 1, kv, scratch);
      }
      pass.layer(draftBlock, x, position, 1, kv, scratch);
      // A sampling request's draft draws with the target's own uniform number for the position,
      // so where the two distributions are close it proposes the token the target will draw.
      float[] logits = pass.logits(x, 0, 1, scratch);
      token[0] = Sampler.choose(logits, 0, logits.length, step.sampling(), position + 1);
      proposals[i] = token[0];
    }
  }

  /**
   * The separate draft's proposals: its K/V (the request's own arrays) is kept for the tokens it
   * saw, as far as they still agree with the request's (a rejected proposal and what follows is
   * computed again), brought up to the step's position, then extended one proposal at a time.
   */
  private void proposeWithModel(ModelStep step, int count, int[] proposals) {
    DraftState d =
        drafts.computeIfAbsent(
            step.requestId(),
            id ->
                new DraftState(
                    new ArrayKvStore(
                        draftModel.hyperparameters().blockCount(),
                        draftModel.kvDim(),
                        draftCapacity)));
    int anchor = step.from();
    int valid = Math.min(d.computed, anchor);
    int differs = Arrays.mismatch(d.tokens, 0, valid, step.tokens(), 0, valid);
    if (differs >= 0) {
      valid = differs;
    }
    if (d.tokens.length < anchor + count) {
      d.tokens = Arrays.copyOf(d.tokens, Math.max(anchor + count, 2 * d.tokens.length));
    }
    System.arraycopy(step.tokens(), valid, d.tokens, valid, anchor - valid);
    if (anchor > valid) {
      draftModel.forward(Arrays.copyOfRange(step.tokens(), valid, anchor), valid, d.kv, false);
    }
    int token = step.tokens()[anchor];
    for (int i = 0; i < count; i++) {
      d.tokens[anchor + i] = token;
      float[] logits = draftModel.decode(token, anchor + i, d.kv);
      token = Sampler.choose(logits, 0, logits.length, step.sampling(), anchor + i + 1);
      proposals[i] = token;
    }
    d.computed = anchor + count;
  }

  /**
   * {@inheritDoc}
   *
   * <p>The logits of every position of the step, the output matrix read once for them all; each
   * position's are the bits it gets alone (each product takes each row on its own).
   */
  @Override
  public void verifyTokens(ModelStep step, int[] tokens) {
    int n = step.to() - step.from();
    Step s = steps.get(step.requestId());
    if (s == null || s.from != step.from() || s.to != step.to() || s.nextLayer != layers()) {
      throw new IllegalStateException(
          "request id="
              + step.requestId()
              + ": verifyTokens of ["
              + step.from()
              + ", "
              + step.to()
              + ") before every layer of the step was written");
    }
    if (split()) {
      throw new IllegalStateException("verifyTokens under context parallelism");
    }
    float[] logits = pass.logits(s.hidden, 0, n, scratch);
    int vocabulary = logits.length / n;
    for (int i = 0; i < n; i++) {
      if (listener != LogitsListener.NONE) {
        listener.logits(
            rank,
            step.requestId(),
            step.from() + i,
            Arrays.copyOfRange(logits, i * vocabulary, (i + 1) * vocabulary));
      }
      tokens[i] = Sampler.choose(logits, i * vocabulary, vocabulary, step, step.from() + i + 1);
    }
  }

  /**
   * The embeddings of this rank's positions of {@code [from, to)} into the rows of {@code x}, in
   * order: every position, or under cp the rank's (whose rows it computes in a prefill).
   */
  private void embedOwn(int[] tokens, int from, int to, float[] x) {
    if (!split()) {
      pass.embed(tokens, from, to, x);
      return;
    }
    int row = 0;
    for (int p = from; p < to; p++) {
      if (stripe.owns(p)) {
        pass.embed(tokens, p, p + 1, x, row++);
      }
    }
  }

  /**
   * Layer {@code l} over positions {@code [start, start+n)}, {@code x} holding the rows {@link
   * #embedOwn} gives: the whole pass, or under cp the prefill split by position ({@link
   * ShardPass#stripedLayer}).
   */
  private void layer(int l, float[] x, int start, int n, KvStore store) {
    if (!split()) {
      pass.layer(l, x, start, n, store, scratch);
    } else {
      pass.stripedLayer(l, x, start, n, store, scratch);
    }
  }

  /**
   * Under cp, position {@code position}'s hidden row, which only its owner computed (at row
   * {@code row} of {@code x} there), on every rank: one gather in which the owner sends the row
   * and the others zeros. Otherwise the row itself.
   */
  private float[] lastRow(float[] x, int row, int position) {
    if (!split()) {
      return x;
    }
    float[] sent = new float[dim];
    if (stripe.owns(position)) {
      System.arraycopy(x, row * dim, sent, 0, dim);
    }
    float[] all = gather.gather(sent, dim);
    System.arraycopy(all, stripe.owner(position) * dim, sent, 0, dim);
    return sent;
  }

  /** The logits every rank holds alike go through {@link Sampler}: any request may sample. */
  @Override
  public boolean samples() {
    return true;
  }

  /** Every chosen token goes through {@link Sampler#choose(float[], int, int, ModelStep, int)}. */
  @Override
  public boolean reportsLogprobs() {
    return true;
  }

  /**
   * A prefill's hidden states hold every position of the step on every rank under tensor
   * parallelism (and on one rank), so each rank computes the prompt's log-probabilities alike;
   * under context parallelism a rank holds only its stripe's rows: not reported there.
   */
  @Override
  public boolean reportsPromptLogprobs() {
    return stripe.whole();
  }

  /**
   * {@inheritDoc}
   *
   * <p>The output matrix is read once for all the step's positions that predict a prompt token.
   */
  @Override
  public void recordPromptLogprobs(ModelStep step) {
    Step s = steps.get(step.requestId());
    if (s == null
        || s.from != step.from()
        || s.to != step.to()
        || s.nextLayer != layers()
        || !stripe.whole()) {
      throw new IllegalStateException(
          "request id="
              + step.requestId()
              + ": prompt log-probabilities of ["
              + step.from()
              + ", "
              + step.to()
              + ") before every layer of the step was written, or under context parallelism");
    }
    int rows = Math.min(step.to(), step.promptLength() - 1) - step.from();
    if (rows <= 0) {
      return;
    }
    float[] logits = pass.logits(s.hidden, 0, rows, scratch);
    int vocabulary = logits.length / rows;
    int[] tokens = step.tokens();
    for (int i = 0; i < rows; i++) {
      int position = step.from() + i + 1;
      step.logprobs().record(position, logits, i * vocabulary, vocabulary, tokens[position]);
    }
  }

  /** Decode steps of several requests share one pass: see {@link #writeDecodeLayer}. */
  @Override
  public boolean batchesDecode() {
    return true;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Every weight row is read once for all the steps' positions (the products take four
   * positions per row pass, as a prefill does), and each layer's two partial outputs are summed
   * across ranks in one call for them all. A position's logits are the bits {@link #writeLayer}
   * gives it alone (ShardPass.decodeLayer).
   *
   * @throws IllegalArgumentException if a step is not one position
   * @throws IllegalStateException if the layers are not called in order with the same steps
   */
  @Override
  public void writeDecodeLayer(List<ModelStep> batch, int layer) {
    int n = batch.size();
    if (layer == 0) {
      batchHidden = PassScratch.atLeast(batchHidden, n * dim);
      if (batchPositions.length < n) {
        batchPositions = new int[n];
      }
      for (int i = 0; i < n; i++) {
        ModelStep step = batch.get(i);
        if (step.to() != step.from() + 1) {
          throw new IllegalArgumentException(
              "request id="
                  + step.requestId()
                  + ": a decode step computes one position, not ["
                  + step.from()
                  + ", "
                  + step.to()
                  + ")");
        }
        batchPositions[i] = step.from();
        pass.embed(step.tokens(), step.from(), step.to(), batchHidden, i);
      }
      batchSize = n;
      batchLayer = 0;
    }
    if (layer != batchLayer || n != batchSize) {
      throw new IllegalStateException(
          "a decode batch of "
              + n
              + " steps at layer "
              + layer
              + " but the batch in progress has "
              + batchSize
              + " steps at layer "
              + batchLayer
              + ": call writeDecodeLayer for layers 0.."
              + (layers() - 1)
              + " in order with the same steps");
    }
    if (layer == draftBlock - 1) {
      // The draft block of these positions, from the last layer's input (as writeLayer does).
      draftHidden = PassScratch.atLeast(draftHidden, n * dim);
      System.arraycopy(batchHidden, 0, draftHidden, 0, n * dim);
      pass.decodeLayer(
          draftBlock,
          draftHidden,
          n,
          batchPositions,
          i -> kv.bind(batch.get(i).pageTable(), batch.get(i).pageTable().length),
          scratch);
    }
    pass.decodeLayer(
        layer,
        batchHidden,
        n,
        batchPositions,
        i -> kv.bind(batch.get(i).pageTable(), batch.get(i).pageTable().length),
        scratch);
    batchLayer++;
  }

  /**
   * {@inheritDoc}
   *
   * <p>The output matrix is read once for every step's last position.
   *
   * @throws IllegalStateException unless every layer of these steps was written
   */
  @Override
  public void nextDecodeTokens(List<ModelStep> batch, int[] tokens) {
    int n = batch.size();
    if (batchLayer != layers() || n != batchSize) {
      throw new IllegalStateException(
          "nextDecodeTokens of " + n + " steps before every layer of the decode batch was written");
    }
    batchLayer = -1;
    float[] logits = pass.logits(batchHidden, 0, n, scratch);
    int vocabulary = logits.length / n;
    for (int i = 0; i < n; i++) {
      ModelStep step = batch.get(i);
      if (listener != LogitsListener.NONE) {
        listener.logits(
            rank,
            step.requestId(),
            step.to() - 1,
            Arrays.copyOfRange(logits, i * vocabulary, (i + 1) * vocabulary));
      }
      tokens[i] = Sampler.choose(logits, i * vocabulary, vocabulary, step, step.to());
    }
  }

  @Override
  public int nextToken(ModelStep step) {
    int last = step.to() - 1;
    float[] logits;
    if (step.to() > step.from()) {
      Step s = steps.get(step.requestId());
      if (s == null || s.to != step.to() || s.nextLayer != layers()) {
        throw new IllegalStateException(
            "request id="
                + step.requestId()
                + ": nextToken after position "
                + last
                + " before every layer of the step was written");
      }
      if (!split()) {
        logits = pass.logits(s.hidden, s.to - s.from - 1, 1, scratch);
      } else {
        int row = stripe.owned(s.from, last);
        logits = pass.logits(lastRow(s.hidden, row, last), 0, 1, scratch);
      }
    } else {
      // The whole prompt was cached: the last position's hidden state is recomputed over the
      // cached K/V, whose own row is in the pages already; nothing is written to shared pages.
      float[] x = new float[dim];
      embedOwn(step.tokens(), last, step.to(), x);
      KvStore cached = new ReadOnly(kv.bind(step.pageTable(), step.pageTable().length));
      for (int l = 0; l < layers(); l++) {
        layer(l, x, last, 1, cached);
      }
      logits = pass.logits(lastRow(x, 0, last), 0, 1, scratch);
    }
    listener.logits(rank, step.requestId(), last, logits);
    return Sampler.choose(logits, 0, logits.length, step, step.to());
  }

  /**
   * {@inheritDoc}
   *
   * <p>Layer by layer: each layer's recomputed K/V (in a store of one layer, reused) is compared
   * with the pages before the next layer runs, so the check holds one layer's rows of the prefix,
   * not every layer's (smollm-135m, 1,000 tokens: 1.5 MB rather than 46 MB a check).
   */
  @Override
  public int verifyPrefix(ModelStep step) {
    int length = step.to();
    if (length == 0) {
      return 0;
    }
    int width = pass.kvWidth();
    int held = stripe.owned(length);
    float[] x = verifyHidden = PassScratch.atLeast(verifyHidden, (split() ? held : length) * dim);
    float[] keys = pageKeys = PassScratch.atLeast(pageKeys, held * width);
    float[] values = pageValues = PassScratch.atLeast(pageValues, held * width);
    embedOwn(step.tokens(), 0, length, x);
    kv.bind(step.pageTable(), step.pageTable().length);
    int pageSize = kv.pageSize();
    int pages = (length + pageSize - 1) / pageSize;
    boolean[] wrong = new boolean[pages];
    if (dropDraftBlockOnRestore && draftBlock >= 0) {
      float[] zeros = new float[width];
      for (int p = 0; p < length; p++) {
        kv.write(draftBlock, p, zeros, zeros, 0);
      }
    }
    for (int l = 0; l < layers(); l++) {
      if (l == draftBlock - 1) {
        // The draft block: the draft layer over the last layer's input.
        float[] d = draftHidden = PassScratch.atLeast(draftHidden, length * dim);
        System.arraycopy(x, 0, d, 0, length * dim);
        compareLayer(draftBlock, d, length, held, width, pageSize, pages, keys, values, wrong);
      }
      compareLayer(l, x, length, held, width, pageSize, pages, keys, values, wrong);
    }
    int mismatches = 0;
    for (boolean w : wrong) {
      mismatches += w ? 1 : 0;
    }
    return mismatches;
  }

  /** Recomputes block {@code l} of the prefix over {@code x} and marks the pages it differs. */
  private void compareLayer(
      int l,
      float[] x,
      int length,
      int held,
      int width,
      int pageSize,
      int pages,
      float[] keys,
      float[] values,
      boolean[] wrong) {
    reference.start(l, length);
    layer(l, x, 0, length, reference);
    kv.read(l, held, keys, values);
    for (int p = 0; p < pages; p++) {
      // This rank's rows of page p.
      int from = stripe.owned(p * pageSize) * width;
      int to = stripe.owned(Math.min(length, (p + 1) * pageSize)) * width;
      wrong[p] |=
          !Arrays.equals(reference.keys, from, to, keys, from, to)
              || !Arrays.equals(reference.values, from, to, values, from, to);
    }
  }

  @Override
  public void released(long requestId) {
    steps.remove(requestId);
    drafts.remove(requestId);
  }

  /**
   * One layer's K/V of a recomputed prefix, for {@link #verifyPrefix}: the layer {@link #start}
   * names, positions {@code 0..capacity-1}; its arrays are reused (and grown) from check to check.
   * Rows are rounded as the pages round them ({@link KvType}), so the recomputed layers attend
   * over the values the pages give and their rows compare with the pages' bit for bit.
   */
  private static final class OneLayer implements KvStore {
    private final int layers;
    private final int kvDim;
    private final Stripe stripe;
    private final KvType type;
    private int layer;
    private int capacity;
    float[] keys = new float[0];
    float[] values = new float[0];

    OneLayer(int layers, int kvDim, Stripe stripe, KvType type) {
      this.layers = layers;
      this.kvDim = kvDim;
      this.stripe = stripe;
      this.type = type;
    }

    /** Holds layer {@code l}'s rows of {@code positions} positions (the stripe's) from now on. */
    void start(int l, int positions) {
      layer = l;
      capacity = positions;
      int rows = stripe.owned(positions);
      keys = PassScratch.atLeast(keys, rows * kvDim);
      values = PassScratch.atLeast(values, rows * kvDim);
    }

    @Override
    public int layers() {
      return layers;
    }

    @Override
    public int kvDim() {
      return kvDim;
    }

    @Override
    public int capacity() {
      return capacity;
    }

    @Override
    public void write(int l, int position, float[] k, float[] v, int offset) {
      check(l, position, 1);
      int row = stripe.localIndex(position);
      System.arraycopy(k, offset, keys, row * kvDim, kvDim);
      System.arraycopy(v, offset, values, row * kvDim, kvDim);
      type.round(keys, row * kvDim, kvDim);
      type.round(values, row * kvDim, kvDim);
    }

    @Override
    public void read(int l, int from, int count, float[] k, float[] v) {
      check(l, from, count - from);
      System.arraycopy(keys, from * kvDim, k, from * kvDim, (count - from) * kvDim);
      System.arraycopy(values, from * kvDim, v, from * kvDim, (count - from) * kvDim);
    }

    private void check(int l, int position, int count) {
      if (l != layer) {
        throw new IllegalStateException("layer " + l + " of a store that holds layer " + layer);
      }
      if (position < 0 || count < 0 || position + count > capacity) {
        throw new IndexOutOfBoundsException(
            "index=" + position + " length=" + count + " capacity=" + capacity);
      }
    }
  }

  /** Reads the pages; ignores writes, whose rows the pages hold already (a cached prompt). */
  private record ReadOnly(KvStore pages) implements KvStore {
    @Override
    public int layers() {
      return pages.layers();
    }

    @Override
    public int kvDim() {
      return pages.kvDim();
    }

    @Override
    public int capacity() {
      return pages.capacity();
    }

    @Override
    public void write(int layer, int position, float[] keys, float[] values, int offset) {}

    @Override
    public void read(int layer, int from, int count, float[] keys, float[] values) {
      pages.read(layer, from, count, keys, values);
    }
  }
}
