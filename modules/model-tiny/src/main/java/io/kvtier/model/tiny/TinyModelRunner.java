package io.kvtier.model.tiny;

import io.kvtier.core.config.LayerMix;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.core.rank.Sampler;
import io.kvtier.spi.Collective;
import io.kvtier.spi.PageMemory;
import io.kvtier.spi.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The tiny transformer as the {@link ModelRunner} of a {@link io.kvtier.core.rank.RankEngine}:
 * step 4 of each tick calls {@link #writeLayer} layer by layer for each running request, then
 * {@link #nextToken}. A runner may hold the whole model (a replica) or, in a tensor-parallel
 * group, its rank's shard of the attention heads, whose KV its device pages hold: each layer's
 * partial outputs are then summed over the group through the engine's collective (see {@link
 * ForwardPass}), so every rank continues with the same hidden state and generates the same
 * tokens, which the engine's replicated state requires, and the same tokens as one rank.
 *
 * <p>A request's hidden states live here between the layers of a step, in a buffer kept per
 * request until {@link #released} and reused by its next steps, and so does its recurrent state
 * (with recurrent layers): a request whose first step starts after a cached prefix loads the
 * state from the snapshot the engine gives it ({@code ModelStep.resumeSlots}), and each step
 * writes the state at the snapshot positions it is given into their slots (docs/HYBRID.md §5);
 * given no snapshot, it rebuilds the state over the prefix, reading its pages and writing none
 * ({@link LayerMix#usablePrefix}). {@link #verifyPrefix} recomputes
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
  private final int kvWidth;
  private final int pageSize;
  private final Map<Long, Chunk> chunks = new HashMap<>();
  private final int rank;
  private final int ranks;
  private final PageMemory device;

  /** Page slots per recurrent-state snapshot (HYBRID.md §5); 0 without recurrent layers. */
  private final int snapshotSlots;

  /** Bytes of one layer's block of a page slot: where a recurrent layer's state goes. */
  private final long blockBytes;

  /**
   * Whether SWA layers keep their KV as windows in the snapshots, not in the pages
   * (docs/HYBRID.md §4); a snapshot is then one byte stream over its slots' blocks.
   */
  private final boolean windowed;

  /** Blocks of a page slot: the layers of the pools' layout. */
  private final int pageBlocks;

  /** Bytes of one K (or V) vector of the shard. */
  private final long vectorBytes;

  private ForwardPass.Combiner combiner;
  private long steps;
  private ForwardPass verifier;
  private ArrayKv reference;
  private float[][] scratch;

  /** One request's step in progress, and its recurrent state between steps. */
  private static final class Chunk {
    /** The first position the step computes: {@code from}, or 0 to rebuild the state. */
    int start;

    /** With SWA windows: the request's own SWA KV; null otherwise. */
    final SwaWindows windows;

    int from;
    int to;
    int nextLayer;
    float[] hidden = new float[0];
    final RecurrentState state;

    Chunk(RecurrentState state, SwaWindows windows) {
      this.state = state;
      this.windows = windows;
    }

    /** Whether the request's state (recurrent and windows) is at {@code position}. */
    boolean isAt(int position) {
      return state.isAt(position) && (windows == null || windows.isAt(position));
    }

    void reset() {
      state.reset();
      if (windows != null) {
        windows.reset();
      }
    }
  }

  /**
   * Creates the runner of one rank.
   *
   * @param model the model
   * @param device the rank's device pool, with the model's KV layout
   */
  public TinyModelRunner(TinyTransformer model, PageMemory device) {
    this(model, device, 0, 1);
  }

  /**
   * Creates the runner of one rank of a tensor-parallel group, which holds heads {@code [rank *
   * heads / ranks, (rank + 1) * heads / ranks)}. With more than one rank, call {@link
   * #combineThrough} before the first step.
   *
   * @param model the model
   * @param device the rank's device pool, with the shard's KV layout
   * @param rank the rank
   * @param ranks the ranks, dividing the head count
   */
  public TinyModelRunner(TinyTransformer model, PageMemory device, int rank, int ranks) {
    this.model = Objects.requireNonNull(model, "model");
    model.config().checkShards(ranks);
    Objects.checkIndex(rank, ranks);
    this.rank = rank;
    this.ranks = ranks;
    this.combiner =
        ranks == 1
            ? ForwardPass.Combiner.WHOLE
            : (values, length) -> {
              throw new IllegalStateException(
                  "rank "
                      + rank
                      + " of "
                      + ranks
                      + " has no collective to sum its partial outputs: call combineThrough"
                      + " before the first step");
            };
    this.pass =
        new ForwardPass(model, rank, ranks, (values, length) -> combiner.sum(values, length));
    this.kv = new PagedKv(device, model.config(), ranks);
    this.checked = new PagedKv(device, model.config(), ranks);
    this.d = model.config().modelDim();
    this.kvWidth = d / ranks;
    this.pageSize = device.spec().layout().pageSize();
    this.device = device;
    this.blockBytes = device.spec().layout().pageBytesPerLayer();
    this.snapshotSlots = snapshotSlots(model.config(), device.spec().layout());
    this.windowed = model.config().windowedSwa();
    this.pageBlocks = device.spec().layout().layers();
    this.vectorBytes = device.spec().layout().vectorBytes();
  }

  /**
   * The page slots one snapshot of a model's recurrent state takes in pools of this layout
   * (HYBRID.md §5): each recurrent layer writes its shard's state ({@code channels x 8} bytes)
   * into its own block of the slots, so 1 when a layer block holds it (the tiny model's pages
   * do: {@code pageSize x 2 x channels x dtypeBytes} bytes, from 4 tokens at 2 bytes), more
   * otherwise; 0 without recurrent layers. With SWA windows a snapshot is one byte stream over
   * the blocks of its slots, the recurrent states and each SWA layer's window ({@link
   * LayerMix#windowSnapshotBytes}) in layer order, so as many slots as the stream fills.
   *
   * @param config the model
   * @param layout the rank's KV layout (its shard's heads)
   * @return the value {@code kvtier.snapshot-slots} must have
   */
  public static int snapshotSlots(ModelConfig config, io.kvtier.spi.KvLayout layout) {
    if (config.windowedSwa()) {
      return config.layerMix().windowSnapshotSlots(layout);
    }
    if (!config.layerMix().hasRecurrent()) {
      return 0;
    }
    long stateBytes = (long) layout.kvHeads() * layout.headDim() * Long.BYTES;
    long block = layout.pageBytesPerLayer();
    return (int) ((stateBytes + block - 1) / block);
  }

  @Override
  public int snapshotSlots() {
    return snapshotSlots;
  }

  /**
   * Sums the partial outputs of each layer over the group through {@code collective}: a SUM
   * allReduce tagged {@value #COMBINE_TAG}, which every rank makes at the same point of the same
   * step. Use the engine's collective ({@code RankEngine.collective()}), so that the calls join
   * its schedule and a rank that fails stops the others at that call. A group of one needs none.
   *
   * @param collective the rank group, of this runner's size
   * @throws IllegalArgumentException if the group's size or this rank differ from the runner's
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
    if (ranks == 1) {
      return;
    }
    combiner =
        (values, length) -> {
          long[] sums =
              collective.allReduce(ReduceOp.SUM, Arrays.copyOf(values, length), COMBINE_TAG);
          System.arraycopy(sums, 0, values, 0, length);
        };
  }

  /** Tag of the allReduce that sums a layer's partial outputs. */
  public static final String COMBINE_TAG = "tp";

  /**
   * Request steps run so far: each call that advanced a request (a prefill chunk or a decode
   * token, or the first token of a fully cached prompt) counts once.
   *
   * @return the count
   */
  public long steps() {
    return steps;
  }

  @Override
  public int layers() {
    return model.config().layers();
  }

  /**
   * Every block of each layer without SWA windows; none with them, whose snapshots are one byte
   * stream over every block that later layers write too: a prepared backup then streams every
   * block after the last layer.
   */
  @Override
  public int streamedBlock(int layer) {
    return windowed ? -1 : layer;
  }

  @Override
  public int pageBlocks() {
    return pageBlocks;
  }

  @Override
  public void writeLayer(ModelStep step, int layer) {
    if (step.to() == step.from()) {
      return;
    }
    Chunk chunk = chunk(step.requestId());
    if (layer == 0) {
      steps++;
      chunk.from = step.from();
      chunk.to = step.to();
      chunk.start = resumeAt(chunk, step.from(), step.resumeSlots());
      chunk.nextLayer = 0;
      int size = (step.to() - chunk.start) * d;
      if (chunk.hidden.length < size) {
        chunk.hidden = new float[size];
      }
      pass.embed(step.tokens(), chunk.start, step.to(), chunk.hidden);
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
    boolean snapshots =
        !step.snapshots().isEmpty() && !model.config().layerMix().layer(layer).hasKv();
    if (snapshots) {
      int[] positions = new int[step.snapshots().size()];
      for (int i = 0; i < positions.length; i++) {
        positions[i] = step.snapshots().get(i).position();
      }
      chunk.state.captureAt(
          positions, (l, position, state) -> writeState(step, l, position, state));
    }
    KvSequence sequence = chunk.windows == null ? kv : chunk.windows.over(kv);
    try {
      pass.layer(layer, chunk.start, step.to(), chunk.hidden, sequence, step.from(), chunk.state);
    } finally {
      if (snapshots) {
        chunk.state.captureAt(NO_POSITIONS, null);
      }
    }
    if (chunk.windows != null && sequence.recomputes(layer)) {
      for (ModelStep.Snapshot snapshot : step.snapshots()) {
        writeWindow(chunk.windows, layer, snapshot);
      }
    }
    chunk.nextLayer++;
    if (chunk.windows != null && chunk.nextLayer == layers()) {
      chunk.windows.ranTo(step.to());
    }
  }

  /**
   * Writes SWA layer {@code layer}'s window at a snapshot's position {@code e}, the K and then
   * the V vectors of positions {@code [e - W + 1, e)} (those at or above 0), into its part of the
   * snapshot's byte stream.
   */
  private void writeWindow(SwaWindows windows, int layer, ModelStep.Snapshot snapshot) {
    int e = snapshot.position();
    int first = windows.windowStart(layer, e);
    long[] at = windowPlace(layer, e, first);
    long bytes = (e - first) * vectorBytes;
    long from = first * vectorBytes;
    writeStream(
        snapshot.slots(),
        at[0],
        MemorySegment.ofArray(windows.keys(layer, e)).asSlice(from, bytes));
    writeStream(
        snapshot.slots(),
        at[1],
        MemorySegment.ofArray(windows.values(layer, e)).asSlice(from, bytes));
  }

  /** Loads SWA layer {@code layer}'s window at {@code e} from a snapshot's slots. */
  private void loadWindow(SwaWindows windows, int layer, int[] slots, int e) {
    int first = windows.windowStart(layer, e);
    long[] at = windowPlace(layer, e, first);
    long bytes = (e - first) * vectorBytes;
    long from = first * vectorBytes;
    readStream(slots, at[0], MemorySegment.ofArray(windows.keys(layer, e)).asSlice(from, bytes));
    readStream(slots, at[1], MemorySegment.ofArray(windows.values(layer, e)).asSlice(from, bytes));
  }

  /** Where the K and the V of positions {@code [first, e)} of an SWA layer's window go. */
  private long[] windowPlace(int layer, int e, int first) {
    LayerMix mix = model.config().layerMix();
    int w = mix.layer(layer).window();
    long base = mix.windowSnapshotOffset(layer, (int) (vectorBytes / Float.BYTES), vectorBytes);
    long skip = (first - (e - (w - 1))) * vectorBytes;
    return new long[] {base + skip, base + (w - 1) * vectorBytes + skip};
  }

  /** Writes {@code bytes} at {@code offset} of a windowed snapshot's stream over its slots. */
  private void writeStream(int[] slots, long offset, MemorySegment bytes) {
    stream(slots, offset, bytes, true);
  }

  /** Reads {@code into.byteSize()} bytes at {@code offset} of a windowed snapshot's stream. */
  private void readStream(int[] slots, long offset, MemorySegment into) {
    stream(slots, offset, into, false);
  }

  /**
   * Copies {@code bytes} to ({@code write}) or from offset {@code offset} of the stream that a
   * windowed snapshot is over its slots: byte {@code x} lies in slot {@code x / slotBytes}, block
   * {@code (x % slotBytes) / blockBytes}; one device call per block a range touches.
   */
  private void stream(int[] slots, long offset, MemorySegment bytes, boolean write) {
    long slotBytes = pageBlocks * blockBytes;
    long done = 0;
    while (done < bytes.byteSize()) {
      long x = offset + done;
      long inSlot = x % slotBytes;
      long n = Math.min(bytes.byteSize() - done, blockBytes - inSlot % blockBytes);
      int slot = slots[(int) (x / slotBytes)];
      int block = (int) (inSlot / blockBytes);
      if (write) {
        device.write(slot, block, inSlot % blockBytes, bytes.asSlice(done, n));
      } else {
        device.read(slot, block, inSlot % blockBytes, bytes.asSlice(done, n));
      }
      done += n;
    }
  }

  private static final int[] NO_POSITIONS = new int[0];

  /** Writes recurrent layer {@code layer}'s state into its blocks of the snapshot's slots. */
  private void writeState(ModelStep step, int layer, int position, long[] state) {
    for (ModelStep.Snapshot snapshot : step.snapshots()) {
      if (snapshot.position() == position && windowed) {
        writeStream(snapshot.slots(), stateOffset(layer), MemorySegment.ofArray(state));
      } else if (snapshot.position() == position) {
        MemorySegment bytes = MemorySegment.ofArray(state);
        long size = bytes.byteSize();
        int[] slots = snapshot.slots();
        for (int k = 0; k < slots.length && k * blockBytes < size; k++) {
          long at = k * blockBytes;
          device.write(slots[k], layer, 0, bytes.asSlice(at, Math.min(blockBytes, size - at)));
        }
      }
    }
  }

  /** Where recurrent layer {@code layer}'s state starts in a windowed snapshot's stream. */
  private long stateOffset(int layer) {
    return model
        .config()
        .layerMix()
        .windowSnapshotOffset(layer, (int) (vectorBytes / Float.BYTES), vectorBytes);
  }

  /**
   * Loads every recurrent layer's state, and with SWA windows every SWA layer's window, at
   * {@code position} from a snapshot's slots.
   */
  private void loadState(Chunk chunk, int[] slots, int position) {
    RecurrentState state = chunk.state;
    LayerMix mix = model.config().layerMix();
    if (windowed) {
      for (int l = 0; l < mix.size(); l++) {
        if (mix.layer(l).kind() == LayerMix.Kind.SWA) {
          loadWindow(chunk.windows, l, slots, position);
        } else if (mix.layer(l).kind() == LayerMix.Kind.RECURRENT) {
          long[] values = new long[state.channels()];
          readStream(slots, stateOffset(l), MemorySegment.ofArray(values));
          state.load(l, values, position);
        }
      }
      chunk.windows.loadedAt(position);
      return;
    }
    long[] values = new long[state.channels()];
    MemorySegment bytes = MemorySegment.ofArray(values);
    long size = bytes.byteSize();
    for (int l = 0; l < mix.size(); l++) {
      if (mix.layer(l).hasKv()) {
        continue;
      }
      for (int k = 0; k < slots.length && k * blockBytes < size; k++) {
        long at = k * blockBytes;
        device.read(slots[k], l, 0, bytes.asSlice(at, Math.min(blockBytes, size - at)));
      }
      state.load(l, values, position);
    }
  }

  private Chunk chunk(long requestId) {
    return chunks.computeIfAbsent(
        requestId,
        id ->
            new Chunk(
                pass.newState(),
                windowed ? new SwaWindows(model.config().layerMix(), kvWidth) : null));
  }

  /**
   * Where a step that computes from {@code from} must start: at {@code from} if the request's
   * recurrent state is there (always, without recurrent layers), else at {@link
   * LayerMix#usablePrefix}, which the engine reports as the request's cached tokens: 0, since the
   * cache holds no recurrent state, so the state is rebuilt over the whole cached prefix. (A
   * start it had no state for would fail in {@link RecurrentState}, never compute silently.)
   */
  private int resumeAt(Chunk chunk, int from, int[] resumeSlots) {
    if (chunk.isAt(from)) {
      return from;
    }
    if (resumeSlots.length > 0) {
      // The cache's snapshot of the state after [0, from) (HYBRID.md §5): resume there.
      loadState(chunk, resumeSlots, from);
      return from;
    }
    chunk.reset();
    // With SWA windows nothing of the SWA KV before from is here: rebuilt from 0 too.
    return windowed ? 0 : model.config().layerMix().usablePrefix(from);
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
      return emit(step, pass.next(chunk.hidden, chunk.to - chunk.start - 1));
    }
    // Nothing computed this step (the whole prompt was cached): recompute the last position's
    // hidden state from the cached KV, writing nothing into the shared pages.
    steps++;
    kv.bind(step.pageTable(), step.pageTable().length);
    if (!model.config().needsSnapshots()) {
      return emit(step, pass.nextAfterCached(step.tokens(), step.to() - 1, kv));
    }
    // The recurrent state at the prompt's end is rebuilt over the whole prompt, and kept: the
    // request's decode steps continue from it.
    Chunk c = chunk(step.requestId());
    int start = resumeAt(c, step.to(), NO_POSITIONS);
    KvSequence sequence = c.windows == null ? kv : c.windows.over(kv);
    try {
      int next =
          pass.run(step.tokens(), start, step.to(), step.to(), sequence, c.state, LayerGate.OPEN);
      if (c.windows != null) {
        c.windows.ranTo(step.to());
      }
      return emit(step, next);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while recomputing a cached prompt", e);
    }
  }

  /**
   * The step's token: the greedy one each path computed, or for a request that samples the
   * {@link Sampler}'s draw from the logits that path left in the pass (every path ends in {@link
   * ForwardPass#next}); with its log-probabilities where the request asked. Penalties and a logit
   * bias change the logits, so a greedy request with them chooses through the {@link Sampler}
   * too.
   */
  private int emit(ModelStep step, int greedy) {
    boolean plain = step.sampling().greedy() && !step.sampling().adjustsLogits();
    if (plain && !step.logprobs().wanted()) {
      return greedy;
    }
    float[] logits = pass.lastLogits();
    if (plain) {
      step.logprobs().record(step.to(), logits, 0, logits.length, greedy);
      return greedy;
    }
    return Sampler.choose(logits, 0, logits.length, step, step.to());
  }

  /** Every rank holds the whole logits alike, so any request may sample. */
  @Override
  public boolean samples() {
    return true;
  }

  /** {@link #emit} records each token's log-probabilities where the request asked. */
  @Override
  public boolean reportsLogprobs() {
    return true;
  }

  @Override
  public int verifyPrefix(ModelStep step) {
    if (step.to() == 0) {
      return 0;
    }
    if (verifier == null) {
      verifier =
          new ForwardPass(model, rank, ranks, (values, length) -> combiner.sum(values, length));
      reference = new ArrayKv(model.config(), ranks);
      int positions = model.config().maxContext() * kvWidth;
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
      LayerMix.Layer kind = model.config().layerMix().layer(layer);
      if (!kind.hasKv() || (windowed && kind.kind() == LayerMix.Kind.SWA)) {
        continue; // a recurrent layer, or an SWA one with windows, has no KV in the pages
      }
      reference.read(layer, step.to(), scratch[0], scratch[1]);
      checked.read(layer, step.to(), scratch[2], scratch[3]);
      for (int p = 0; p < pages; p++) {
        int fromIndex = p * pageSize * kvWidth;
        int toIndex = Math.min(step.to(), (p + 1) * pageSize) * kvWidth;
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
