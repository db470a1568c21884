package io.kvtier.model.llama;

import io.kvtier.core.config.Parallelism;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensorInfo;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.ModelHyperparameters;
import io.kvtier.gguf.text.GgufText;
import io.kvtier.serving.ModelText;
import io.kvtier.serving.RankShard;
import io.kvtier.serving.ServingModel;
import io.kvtier.spi.KvLayout;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;

/**
 * A {@link LlamaModel} as the serving engine's model: its K/V in kvtier's pages (F32, {@link
 * PagedKvStore}), one {@link LlamaModelRunner} per rank holding the rank's share of the heads
 * and feed-forward rows, greedy decoding. Also what a server shows of it ({@link #name}, the
 * shape, {@link #tensorType}) and the {@link #file} for its tokenizer metadata.
 *
 * <p>Immutable and thread-safe. The weights are read in place from the mapped file: {@link
 * #close} unmaps it, after the model's last use (a server keeps it open until it exits).
 */
public final class LlamaServingModel implements ServingModel, AutoCloseable {
  private final GgufFile file;
  private final LlamaModel model;
  private final int maxContext;
  private final LogitsListener listener;
  private final ModelText text;

  /** Tokens the draft proposes per decode step; 0 without a draft. */
  private final int speculativeTokens;

  /** A separate draft model and its file ({@link #withDraftModel}), or null. */
  private final LlamaModel draftModel;

  private final GgufFile draftFile;

  /** How the pages store the K/V ({@link #withKvType}). */
  private final KvType kvType;

  private LlamaServingModel(
      GgufFile file,
      LlamaModel model,
      int maxContext,
      LogitsListener listener,
      ModelText text,
      int speculativeTokens,
      LlamaModel draftModel,
      GgufFile draftFile,
      KvType kvType) {
    this.kvType = kvType;
    this.draftModel = draftModel;
    this.draftFile = draftFile;
    this.file = file;
    this.model = model;
    this.maxContext = maxContext;
    this.listener = listener;
    this.text = text;
    this.speculativeTokens = speculativeTokens;
  }

  /**
   * This model decoding speculatively with a draft layer (docs/MODELS.md, "Speculative
   * decoding"): the file's layer after the target's ({@code blk.N.*}), or with {@code copyOfLast}
   * a copy of the target's last layer (a testing draft whose proposals are always the target's
   * tokens while its K/V is intact).
   *
   * @param copyOfLast a copy of the last layer rather than the file's draft layer
   * @param tokens tokens proposed per decode step, 1 to 64
   * @return the model with the draft; the same file, not to be closed twice
   * @throws IllegalArgumentException for a token count out of range, or a file without a draft
   *     layer (naming the tensor), or a model that has a draft already
   */
  public LlamaServingModel withDraftLayer(boolean copyOfLast, int tokens) {
    checkSpeculativeTokens(tokens);
    if (model.hasDraft() || draftModel != null) {
      throw new IllegalArgumentException(name() + " has a draft already: " + model.draftName());
    }
    LlamaModel drafted;
    try {
      drafted = copyOfLast ? model.withDraftCopyOfLast() : model.withDraftLayer(file);
    } catch (io.kvtier.gguf.GgufException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
    return new LlamaServingModel(
        file, drafted, maxContext, listener, text, tokens, null, null, kvType);
  }

  /**
   * This model decoding speculatively with a separate draft model of the same vocabulary
   * (docs/MODELS.md, "Speculative decoding"): every rank runs the whole draft, whose K/V lives in
   * each request's own arrays, outside the pages and so in no tier (a request recomputes its
   * draft K/V over its prefix, cached or not, at its first proposal).
   *
   * @param draft the draft's file, which this model closes with its own
   * @param tokens tokens proposed per decode step, 1 to 64
   * @return the model with the draft
   * @throws IllegalArgumentException for a token count out of range, a draft whose vocabulary
   *     differs, or a model that has a draft already
   */
  public LlamaServingModel withDraftModel(GgufFile draft, int tokens) {
    Objects.requireNonNull(draft, "draft");
    checkSpeculativeTokens(tokens);
    if (model.hasDraft() || draftModel != null) {
      throw new IllegalArgumentException(name() + " has a draft already");
    }
    LlamaModel d = LlamaModel.of(draft);
    if (d.vocabularySize() != model.vocabularySize()) {
      throw new IllegalArgumentException(
          "the draft model "
              + draft.path()
              + " has a vocabulary of "
              + d.vocabularySize()
              + " tokens but "
              + name()
              + " has "
              + model.vocabularySize()
              + ": a draft must share the target's vocabulary");
    }
    return new LlamaServingModel(file, model, maxContext, listener, text, tokens, d, draft, kvType);
  }

  /** The separate draft model, or null ({@link #withDraftModel}). */
  LlamaModel draftModel() {
    return draftModel;
  }

  /**
   * What the draft is, for a startup line: {@code draft-layer (K/V block N)}, {@code model NAME
   * (K/V outside the tiers)}; empty without one.
   */
  public String draftDescription() {
    if (draftModel != null) {
      return "model "
          + draftModel.hyperparameters().name()
          + " ("
          + draftFile.path().getFileName()
          + ", K/V outside the tiers)";
    }
    return model.hasDraft() ? model.draftName() + " (K/V block " + layers() + ")" : "";
  }

  /** Testing only: a draft layer copied from layer {@code layer} (mostly wrong but for the last). */
  LlamaServingModel withDraftCopyOf(int layer, int tokens) {
    checkSpeculativeTokens(tokens);
    return new LlamaServingModel(
        file, model.withDraftCopyOf(layer), maxContext, listener, text, tokens, null, null, kvType);
  }

  /** The most tokens a draft may propose per step. */
  public static final int MAX_SPECULATIVE_TOKENS = 64;

  /**
   * Checks a number of speculative tokens.
   *
   * @throws IllegalArgumentException unless 1 to {@link #MAX_SPECULATIVE_TOKENS}
   */
  public static void checkSpeculativeTokens(int tokens) {
    if (tokens < 1 || tokens > MAX_SPECULATIVE_TOKENS) {
      throw new IllegalArgumentException(
          "num-speculative-tokens="
              + tokens
              + " is outside [1, "
              + MAX_SPECULATIVE_TOKENS
              + "]: the draft proposes that many tokens a decode step");
    }
  }

  /** Tokens the draft proposes per decode step; 0 without a draft. */
  public int speculativeTokens() {
    return speculativeTokens;
  }

  /**
   * The draft's identity ({@code draft-layer}, {@code draft-copy-last}), which the L3 model id
   * carries because the draft's K/V is in the pages; empty without a draft.
   */
  public String draftName() {
    return model.draftName();
  }

  /**
   * Whether the file's RoPE has frequency factors ({@code rope_freqs.weight}, Llama 3.1 and
   * later). kvtier before 2026-12-05 ignored them, so KV that an older kvtier stored for such a
   * file is not this model's: serve's L3 model id says so ({@code -rope-freqs}), and a store that
   * outlives the process never serves those pages again.
   */
  public boolean scalesRopeFrequencies() {
    return model.ropeFactors() != null;
  }

  /**
   * Where some layers attend over a sliding window (Gemma), how: {@code "sliding window 4096 in
   * 13 of 26 layers"}; empty where every layer attends over every position. Every page is kept
   * whatever the window (the cache's exactness needs no more: docs/HYBRID.md §2).
   */
  public String slidingWindows() {
    Family family = model.family();
    int sliding = 0;
    int window = 0;
    for (int l = 0; l < layers(); l++) {
      if (family.window(l) > 0) {
        sliding++;
        window = family.window(l);
      }
    }
    return sliding == 0
        ? ""
        : "sliding window " + window + " in " + sliding + " of " + layers() + " layers";
  }

  /** The blocks of a page's KV (kvtier.layers): {@link #layers()}, plus 1 with a draft layer. */
  public int kvBlocks() {
    return model.kvBlocks();
  }

  /**
   * The model of an open file, serving up to {@code maxContext} tokens per sequence.
   *
   * @param file the file, which this model closes
   * @param maxContext tokens per sequence, from 1 to the file's context length
   * @return the model
   * @throws IllegalArgumentException if {@code maxContext} is out of range
   * @throws io.kvtier.gguf.GgufUnsupportedException if the file's architecture, RoPE scaling or
   *     a tensor type is not supported
   */
  public static LlamaServingModel of(GgufFile file, int maxContext) {
    Objects.requireNonNull(file, "file");
    return of(file, LlamaModel.of(file), maxContext);
  }

  /**
   * The model of an open file, serving its whole context length.
   *
   * @param file the file, which this model closes
   * @return the model
   */
  public static LlamaServingModel of(GgufFile file) {
    Objects.requireNonNull(file, "file");
    LlamaModel model = LlamaModel.of(file);
    return of(file, model, model.contextLength());
  }

  private static LlamaServingModel of(GgufFile file, LlamaModel model, int maxContext) {
    if (maxContext < 1 || maxContext > model.contextLength()) {
      throw new IllegalArgumentException(
          "max-context="
              + maxContext
              + " is outside [1, "
              + model.contextLength()
              + "], the context length of "
              + file.path());
    }
    // The text reads the tokenizer's metadata and chat template once, here. A file without a
    // tokenizer (weights only) serves prompts of token ids.
    String name = model.hyperparameters().name();
    ModelText text =
        file.has("tokenizer.ggml.model") ? GgufText.of(file, name) : ModelText.tokensOnly(name);
    return new LlamaServingModel(
        file, model, maxContext, LogitsListener.NONE, text, 0, null, null, KvType.F32);
  }

  /**
   * This model with a listener that gets the logits of every generated token on every rank; the
   * two share the file (close one).
   *
   * @param listener the listener
   * @return the model that reports to it
   */
  public LlamaServingModel withLogitsListener(LogitsListener listener) {
    return new LlamaServingModel(
        file,
        model,
        maxContext,
        Objects.requireNonNull(listener, "listener"),
        text,
        speculativeTokens,
        draftModel,
        draftFile,
        kvType);
  }

  /**
   * This model with its K/V stored as {@code type} in the pages (docs/MODELS.md, "KV
   * precision"): F16 halves the bytes of every page in every tier, so each holds twice the tokens;
   * the two share the file (close one).
   *
   * @param type the K/V type
   * @return the model that stores its K/V so
   */
  public LlamaServingModel withKvType(KvType type) {
    return new LlamaServingModel(
        file,
        model,
        maxContext,
        listener,
        text,
        speculativeTokens,
        draftModel,
        draftFile,
        Objects.requireNonNull(type, "type"));
  }

  /** How the pages store this model's K/V: F32 unless {@link #withKvType} said otherwise. */
  public KvType kvType() {
    return kvType;
  }

  /** The forward pass. */
  public LlamaModel model() {
    return model;
  }

  /** The file, for its metadata (the tokenizer's {@code tokenizer.ggml.*} keys, templates). */
  public GgufFile file() {
    return file;
  }

  /** The file's hyperparameters. */
  public ModelHyperparameters hyperparameters() {
    return model.hyperparameters();
  }

  /** {@code general.name}, or the file name when absent. */
  public String name() {
    return hyperparameters().name();
  }

  /** {@code general.architecture}: {@code llama}, {@code qwen2}, {@code gemma2} or {@code gemma3}. */
  public String architecture() {
    return hyperparameters().architecture();
  }

  /** Transformer layers. */
  public int layers() {
    return hyperparameters().blockCount();
  }

  /** The embedding (hidden) size. */
  public int dim() {
    return hyperparameters().embeddingLength();
  }

  /** Query heads. */
  public int heads() {
    return hyperparameters().headCount();
  }

  /** KV heads; the rank count must divide them. */
  public int kvHeads() {
    return hyperparameters().headCountKv();
  }

  /** Floats per head. */
  public int headSize() {
    return hyperparameters().headSize();
  }

  /** The feed-forward's inner size. */
  public int feedForwardLength() {
    return hyperparameters().feedForwardLength();
  }

  /** The file's context length; {@link #maxContext()} may be less. */
  public int contextLength() {
    return model.contextLength();
  }

  /**
   * The type of most of the layers' weight matrices (by count), for example {@code F32} or
   * {@code Q8_0}.
   */
  public GgufTensorType tensorType() {
    Map<GgufTensorType, Integer> counts = new EnumMap<>(GgufTensorType.class);
    for (GgufTensorInfo info : file.tensorInfos()) {
      if (info.name().startsWith("blk.") && info.dims().length == 2) {
        counts.merge(info.type(), 1, Integer::sum);
      }
    }
    return counts.entrySet().stream()
        .max(Comparator.comparingInt(Map.Entry<GgufTensorType, Integer>::getValue))
        .map(Map.Entry::getKey)
        .orElseThrow();
  }

  /**
   * The {@code kvtier.*} layout the config must have: the model's layers, KV heads and head
   * size, its {@link #kvType}'s element size, with any page size.
   *
   * @param pageSize tokens per page
   * @return the layout
   */
  public KvLayout kvLayout(int pageSize) {
    return PagedKvStore.layout(model.kvShape(), pageSize, 1, Parallelism.TP, kvType);
  }

  /**
   * {@inheritDoc}
   *
   * <p>The file's tokenizer, BOS/EOS rules and chat template ({@link GgufText}); for a file
   * without a tokenizer, {@link ModelText#tokensOnly}: prompts of token ids.
   */
  @Override
  public ModelText text() {
    return text;
  }

  @Override
  public int vocabularySize() {
    return model.vocabularySize();
  }

  @Override
  public int maxContext() {
    return maxContext;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Also that each rank's share splits every matrix (tensor parallelism): the feed-forward
   * into whole blocks, the output projection's columns on block boundaries.
   */
  @Override
  public void checkLayout(KvLayout layout, int ranks) {
    Objects.requireNonNull(layout, "layout");
    PagedKvStore.checkLayout(model.kvShape(), layout, 1, false, kvType);
    ShardPass.checkRanks(hyperparameters(), ranks);
    for (int r = 0; r < ranks; r++) {
      new ShardPass(model, r, ranks, PartialSums.WHOLE);
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>Under tp each rank's share of the heads ({@link #checkLayout}). Under cp every rank holds
   * the whole weights, and a page of every head and {@code 1/ranks} of the positions ({@link
   * PagedKvStore#layout(ModelHyperparameters, int, int, Parallelism, KvType)}): the ranks times the
   * interleave must divide the page size, and the ranks a row's floats; the KV heads need not
   * divide by the ranks, nor the matrices split.
   */
  @Override
  public KvLayout rankLayout(KvLayout layout, int ranks, Parallelism parallelism) {
    Objects.requireNonNull(layout, "layout");
    if (!parallelism.cp() || ranks == 1) {
      checkLayout(layout, ranks);
    } else {
      checkNotContextParallel(ranks);
      PagedKvStore.checkLayout(model.kvShape(), layout, 1, false, kvType);
    }
    return PagedKvStore.layout(model.kvShape(), layout.pageSize(), ranks, parallelism, kvType);
  }

  /**
   * {@inheritDoc}
   *
   * <p>A {@link LlamaModelRunner} on the rank's share ({@link RankShard#parallelism}), merging
   * partial outputs through the engine's collective.
   */
  /**
   * Refuses a draft under context parallelism over several ranks.
   *
   * @throws IllegalArgumentException with a draft
   */
  void checkNotContextParallel(int ranks) {
    if (model.hasDraft() || draftModel != null) {
      throw new IllegalArgumentException(
          "speculative decoding ("
              + (draftModel != null ? "draft model" : model.draftName())
              + ") runs on one rank or under --parallel tp, not over "
              + ranks
              + " cp ranks: a verification pass of several positions under cp is not built;"
              + " use --parallel tp (kvtier.parallel=tp) or drop --speculative");
    }
  }

  /** Testing only: runners that drop the draft block of a restored prefix (the broken tier). */
  boolean dropDraftBlockOnRestore;

  @Override
  public ModelRunner openRunner(RankShard shard) {
    LlamaModelRunner runner =
        new LlamaModelRunner(
            this, shard.device(), shard.rank(), shard.ranks(), shard.parallelism(), listener);
    runner.dropDraftBlockOnRestore = dropDraftBlockOnRestore;
    shard.whenJoined(runner::combineThrough);
    return runner;
  }

  /** Unmaps the file; no runner may run after. */
  @Override
  public void close() {
    if (draftFile != null) {
      draftFile.close();
    }
    file.close();
  }

  @Override
  public String toString() {
    return model
        + ", "
        + tensorType()
        + ", context "
        + maxContext
        + (speculativeTokens > 0 ? ", " + speculativeTokens + " speculative tokens" : "");
  }
}
