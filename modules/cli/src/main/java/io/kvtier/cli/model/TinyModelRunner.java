package io.kvtier.cli.model;

import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.spi.PageMemory;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The tiny transformer as the {@link ModelRunner} of a {@link io.kvtier.core.rank.RankEngine}:
 * step 4 of each tick calls {@link #writeLayer} layer by layer for each running request, then
 * {@link #nextToken}. Each rank runs the whole model on its own device pages (the ranks are
 * replicas, as tensor-parallel ranks are for the tokens they produce), so every rank generates
 * the same tokens, which the engine's replicated state requires.
 *
 * <p>A request's hidden states live here between the layers of a step, in a buffer kept per
 * request until {@link #released} and reused by its next steps. {@link #verifyPrefix} recomputes
 * a loaded-back prefix from scratch and compares its KV bit for bit with the device pages.
 *
 * <p>Not thread-safe: one per rank, called from the rank's scheduler thread.
 */
public final class TinyModelRunner implements ModelRunner {
  private final TinyTransformer model;
  private final ForwardPass pass;
  private final PagedKv kv;
  private final PagedKv checked;
  private final int d;
  private final int pageSize;
  private final Map<Long, Chunk> chunks = new HashMap<>();
  private final TokenListener listener;
  private ForwardPass verifier;
  private ArrayKv reference;
  private float[][] scratch;

  /** Told every token the model generates, in order per request. */
  @FunctionalInterface
  public interface TokenListener {
    /** Drops the tokens. */
    TokenListener NONE = (requestId, token) -> {};

    /**
     * A token was generated.
     *
     * @param requestId the request
     * @param token the token, the request's next output
     */
    void generated(long requestId, int token);
  }

  /** One request's step in progress. */
  private static final class Chunk {
    int from;
    int to;
    int nextLayer;
    float[] hidden = new float[0];
  }

  /**
   * Creates the runner of one rank.
   *
   * @param model the model
   * @param device the rank's device pool, with the model's KV layout
   */
  public TinyModelRunner(TinyTransformer model, PageMemory device) {
    this(model, device, TokenListener.NONE);
  }

  /**
   * Creates the runner of one rank that reports every generated token.
   *
   * @param model the model
   * @param device the rank's device pool, with the model's KV layout
   * @param listener told each token as the model generates it, on the rank's thread
   */
  public TinyModelRunner(TinyTransformer model, PageMemory device, TokenListener listener) {
    this.model = Objects.requireNonNull(model, "model");
    this.listener = Objects.requireNonNull(listener, "listener");
    this.pass = model.newForwardPass();
    this.kv = new PagedKv(device, model.config());
    this.checked = new PagedKv(device, model.config());
    this.d = model.config().modelDim();
    this.pageSize = device.spec().layout().pageSize();
  }

  @Override
  public int layers() {
    return model.config().layers();
  }

  @Override
  public void writeLayer(ModelStep step, int layer) {
    if (step.to() == step.from()) {
      return;
    }
    Chunk chunk = chunks.computeIfAbsent(step.requestId(), id -> new Chunk());
    if (layer == 0) {
      chunk.from = step.from();
      chunk.to = step.to();
      chunk.nextLayer = 0;
      int size = (step.to() - step.from()) * d;
      if (chunk.hidden.length < size) {
        chunk.hidden = new float[size];
      }
      pass.embed(step.tokens(), step.from(), step.to(), chunk.hidden);
    }
    if (chunk.from != step.from() || chunk.to != step.to() || chunk.nextLayer != layer) {
      throw new IllegalStateException(
          "request id="
              + step.requestId()
              + ": layer "
              + layer
              + " of positions ["
              + step.from()
              + ", "
              + step.to()
              + ") but the step in progress is"
              + " ["
              + chunk.from
              + ", "
              + chunk.to
              + ") at layer "
              + chunk.nextLayer
              + ": call writeLayer for layers 0.."
              + (layers() - 1)
              + " in order");
    }
    kv.bind(step.pageTable(), step.pageTable().length);
    pass.layer(layer, step.from(), step.to(), chunk.hidden, kv, true);
    chunk.nextLayer++;
  }

  @Override
  public int nextToken(ModelStep step) {
    Chunk chunk = chunks.get(step.requestId());
    if (step.to() > step.from()) {
      if (chunk == null || chunk.to != step.to() || chunk.nextLayer != layers()) {
        throw new IllegalStateException(
            "request id="
                + step.requestId()
                + ": nextToken after"
                + " position "
                + (step.to() - 1)
                + " before every layer of the step was written");
      }
      return emit(step, pass.next(chunk.hidden, chunk.to - chunk.from - 1));
    }
    // Nothing computed this step (the whole prompt was cached): recompute the last position's
    // hidden state from the cached KV, writing nothing into the shared pages.
    kv.bind(step.pageTable(), step.pageTable().length);
    return emit(step, pass.nextAfterCached(step.tokens(), step.to() - 1, kv));
  }

  private int emit(ModelStep step, int token) {
    listener.generated(step.requestId(), token);
    return token;
  }

  @Override
  public int verifyPrefix(ModelStep step) {
    if (step.to() == 0) {
      return 0;
    }
    if (verifier == null) {
      verifier = model.newForwardPass();
      reference = new ArrayKv(model.config());
      int positions = model.config().maxContext() * d;
      scratch =
          new float[][] {
            new float[positions], new float[positions], new float[positions], new float[positions]
          };
    }
    try {
      verifier.forward(step.tokens(), 0, step.to(), reference, LayerGate.OPEN);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while verifying a prefix", e);
    }
    checked.bind(step.pageTable(), step.pageTable().length);
    int pages = (step.to() + pageSize - 1) / pageSize;
    boolean[] wrong = new boolean[pages];
    for (int layer = 0; layer < layers(); layer++) {
      reference.read(layer, step.to(), scratch[0], scratch[1]);
      checked.read(layer, step.to(), scratch[2], scratch[3]);
      for (int p = 0; p < pages; p++) {
        int fromIndex = p * pageSize * d;
        int toIndex = Math.min(step.to(), (p + 1) * pageSize) * d;
        wrong[p] |=
            !java.util.Arrays.equals(scratch[0], fromIndex, toIndex, scratch[2], fromIndex, toIndex)
                || !java.util.Arrays.equals(
                    scratch[1], fromIndex, toIndex, scratch[3], fromIndex, toIndex);
      }
    }
    int mismatches = 0;
    for (boolean w : wrong) {
      mismatches += w ? 1 : 0;
    }
    return mismatches;
  }

  @Override
  public void released(long requestId) {
    chunks.remove(requestId);
  }
}
