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

  private LlamaServingModel(
      GgufFile file, LlamaModel model, int maxContext, LogitsListener listener, ModelText text) {
    this.file = file;
    this.model = model;
    this.maxContext = maxContext;
    this.listener = listener;
    this.text = text;
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
    return new LlamaServingModel(file, model, maxContext, LogitsListener.NONE, text);
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
        file, model, maxContext, Objects.requireNonNull(listener, "listener"), text);
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

  /** {@code general.architecture}: {@code llama} or {@code qwen2}. */
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
   * size, F32, with any page size.
   *
   * @param pageSize tokens per page
   * @return the layout
   */
  public KvLayout kvLayout(int pageSize) {
    return PagedKvStore.layout(hyperparameters(), pageSize, 1);
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
    PagedKvStore.checkLayout(hyperparameters(), layout, 1, false);
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
   * PagedKvStore#layout(ModelHyperparameters, int, int, Parallelism)}): the ranks times the
   * interleave must divide the page size, and the ranks a row's floats; the KV heads need not
   * divide by the ranks, nor the matrices split.
   */
  @Override
  public KvLayout rankLayout(KvLayout layout, int ranks, Parallelism parallelism) {
    Objects.requireNonNull(layout, "layout");
    if (!parallelism.cp() || ranks == 1) {
      checkLayout(layout, ranks);
    } else {
      PagedKvStore.checkLayout(hyperparameters(), layout, 1, false);
    }
    return PagedKvStore.layout(hyperparameters(), layout.pageSize(), ranks, parallelism);
  }

  /**
   * {@inheritDoc}
   *
   * <p>A {@link LlamaModelRunner} on the rank's share ({@link RankShard#parallelism}), merging
   * partial outputs through the engine's collective.
   */
  @Override
  public ModelRunner openRunner(RankShard shard) {
    LlamaModelRunner runner =
        new LlamaModelRunner(
            this, shard.device(), shard.rank(), shard.ranks(), shard.parallelism(), listener);
    shard.whenJoined(runner::combineThrough);
    return runner;
  }

  /** Unmaps the file; no runner may run after. */
  @Override
  public void close() {
    file.close();
  }

  @Override
  public String toString() {
    return model + ", " + tensorType() + ", context " + maxContext;
  }
}
