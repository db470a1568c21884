package io.kvtier.core.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.StringJoiner;

/**
 * The kind of each layer of a model: full causal attention, sliding-window
 * attention (SWA) over the last {@code window} positions, or a recurrent layer whose fixed-size
 * state is updated once per token (docs/HYBRID.md). Written as one comma-separated element per
 * layer, in layer order, {@code kind*N} standing for N such layers: {@code full,swa:64,recurrent}
 * or {@code full,swa:64*5}. {@link #toString} writes one element per layer.
 *
 * <p>What the mix means for the cache is {@link #usablePrefix}: the part of a matched prefix from
 * which the model can resume exactly. Every layer kind's per-position output is a function of
 * the tokens up to that position only, so cached full and SWA KV is always right; what a cached
 * prefix lacks is the recurrent state at its end, which the cache keeps as snapshots at some node
 * ends (docs/HYBRID.md §5).
 *
 * @param layers the layers, in order, at least one
 */
public record LayerMix(List<Layer> layers) {

  /** A layer's kind. */
  public enum Kind {
    /** Causal attention over every earlier position. */
    FULL,
    /** Causal attention over the last {@code window} positions, the current one included. */
    SWA,
    /** A fixed-size state per sequence, updated per token; no KV. */
    RECURRENT
  }

  /**
   * One layer.
   *
   * @param kind the kind
   * @param window for {@link Kind#SWA}, the positions each token attends to (its own included), at
   *     least 1; 0 for the other kinds
   */
  public record Layer(Kind kind, int window) {
    /** Validates the window against the kind. */
    public Layer {
      Objects.requireNonNull(kind, "kind");
      if (kind == Kind.SWA ? window < 1 : window != 0) {
        throw new IllegalArgumentException(
            kind == Kind.SWA
                ? "an SWA layer's window=" + window + " must be >= 1"
                : "a " + kind + " layer has no window, got window=" + window);
      }
    }

    /** A full-attention layer. */
    public static final Layer FULL = new Layer(Kind.FULL, 0);

    /** A recurrent layer. */
    public static final Layer RECURRENT = new Layer(Kind.RECURRENT, 0);

    /**
     * An SWA layer.
     *
     * @param window positions attended to, at least 1
     * @return the layer
     */
    public static Layer swa(int window) {
      return new Layer(Kind.SWA, window);
    }

    /**
     * Whether the layer keeps KV per position (full or SWA attention).
     *
     * @return true unless recurrent
     */
    public boolean hasKv() {
      return kind != Kind.RECURRENT;
    }

    @Override
    public String toString() {
      return switch (kind) {
        case FULL -> "full";
        case SWA -> "swa:" + window;
        case RECURRENT -> "recurrent";
      };
    }
  }

  /** Validates and copies the layers. */
  public LayerMix {
    layers = List.copyOf(Objects.requireNonNull(layers, "layers"));
    if (layers.isEmpty()) {
      throw new IllegalArgumentException("a layer mix needs at least one layer");
    }
  }

  /**
   * Every layer full attention: the transformer as it was before layer mixes.
   *
   * @param count layers, at least 1
   * @return the mix
   */
  public static LayerMix full(int count) {
    if (count < 1) {
      throw new IllegalArgumentException("layers=" + count + " must be >= 1");
    }
    return new LayerMix(Collections.nCopies(count, Layer.FULL));
  }

  /**
   * Parses a mix written as one element per layer, comma-separated: {@code full}, {@code
   * swa:W} (W a positive window in tokens) or {@code recurrent}, each optionally followed by
   * {@code *N} for N such layers in a row; case and spaces around elements are ignored.
   *
   * @param text the mix, e.g. {@code full,swa:64,recurrent} or {@code full,swa:64*5,recurrent*2}
   * @param source what the user wrote it as (an option or key), named in the errors
   * @return the mix
   * @throws IllegalArgumentException naming the source, the element and the fix
   */
  public static LayerMix parse(String text, String source) {
    Objects.requireNonNull(text, "text");
    Objects.requireNonNull(source, "source");
    if (text.isBlank()) {
      throw new IllegalArgumentException(
          source + " is empty: give one layer kind per layer, e.g. full,swa:64,recurrent");
    }
    String[] parts = text.split(",", -1);
    List<Layer> out = new ArrayList<>(parts.length);
    for (int i = 0; i < parts.length; i++) {
      String e = parts[i].strip().toLowerCase(java.util.Locale.ROOT);
      int times = 1;
      int star = e.indexOf('*');
      if (star >= 0) {
        times = repeat(e.substring(star + 1).strip(), i, text, source, e);
        e = e.substring(0, star).strip();
      }
      Layer layer = element(e, i, text, source);
      for (int t = 0; t < times; t++) {
        out.add(layer);
      }
    }
    return new LayerMix(out);
  }

  /** The N of {@code kind*N}: how many such layers in a row, at least 1, at most 4096. */
  private static int repeat(String n, int index, String text, String source, String e) {
    int times;
    try {
      times = Integer.parseInt(n);
    } catch (NumberFormatException notANumber) {
      times = -1;
    }
    if (times < 1 || times > MAX_REPEAT) {
      throw new IllegalArgumentException(
          "element "
              + (index + 1)
              + " of "
              + source
              + "='"
              + text
              + "' is '"
              + e
              + "': the count after '*' must be a whole number from 1 to "
              + MAX_REPEAT
              + ", as in swa:64*5");
    }
    return times;
  }

  /** The most layers one {@code kind*N} element may stand for. */
  private static final int MAX_REPEAT = 4096;

  private static Layer element(String e, int index, String text, String source) {
    String where = "element " + (index + 1) + " of " + source + "='" + text + "' is '" + e + "'";
    String kinds = ": each layer is full, swa:W (W >= 1 tokens) or recurrent";
    if (e.equals("full")) {
      return Layer.FULL;
    }
    if (e.equals("recurrent")) {
      return Layer.RECURRENT;
    }
    if (e.equals("swa")) {
      throw new IllegalArgumentException(where + ": an SWA layer needs its window, as in swa:64");
    }
    if (e.startsWith("swa:")) {
      String w = e.substring(4).strip();
      int window;
      try {
        window = Integer.parseInt(w);
      } catch (NumberFormatException notANumber) {
        throw new IllegalArgumentException(
            where + ": the window '" + w + "' is not a whole number of tokens, as in swa:64");
      }
      if (window < 1) {
        throw new IllegalArgumentException(where + ": the window must be >= 1 token");
      }
      return Layer.swa(window);
    }
    if (e.isEmpty()) {
      throw new IllegalArgumentException(where + " (empty)" + kinds);
    }
    throw new IllegalArgumentException(where + kinds);
  }

  /**
   * The layer count.
   *
   * @return at least 1
   */
  public int size() {
    return layers.size();
  }

  /**
   * One layer.
   *
   * @param index the layer
   * @return its kind and window
   */
  public Layer layer(int index) {
    return layers.get(index);
  }

  /**
   * Whether every layer is full attention: the cache's behaviour for such a mix is exactly the one
   * before layer mixes existed.
   *
   * @return true if no layer is SWA or recurrent
   */
  public boolean allFull() {
    return layers.stream().allMatch(l -> l.kind() == Kind.FULL);
  }

  /**
   * Whether some layer is recurrent.
   *
   * @return true if the model keeps a recurrent state per sequence
   */
  public boolean hasRecurrent() {
    return layers.stream().anyMatch(l -> l.kind() == Kind.RECURRENT);
  }

  /**
   * Whether some layer is sliding-window attention.
   *
   * @return true if an SWA layer is in the mix
   */
  public boolean hasSwa() {
    return layers.stream().anyMatch(l -> l.kind() == Kind.SWA);
  }

  /**
   * The layers whose KV a page slot holds, one block each (docs/HYBRID.md §4): every layer when
   * SWA KV is kept in the pages (and a recurrent layer's block unused, as before windows
   * existed); with {@code windowedSwa} only the full-attention layers, at least one block, since
   * SWA windows and recurrent states then live in the snapshot slots only.
   *
   * @param windowedSwa whether SWA KV is kept as windows at snapshot positions instead of pages
   * @return blocks per page slot, at least 1
   */
  public int pageLayers(boolean windowedSwa) {
    if (!windowedSwa) {
      return layers.size();
    }
    return (int) Math.max(1, layers.stream().filter(l -> l.kind() == Kind.FULL).count());
  }

  /**
   * The block of a page slot that holds a layer's KV, as {@link #pageLayers} counts them.
   *
   * @param layer the layer
   * @param windowedSwa whether SWA KV is kept as windows
   * @return the block: {@code layer} without windows (a recurrent layer's block is unused
   *     then); with windows the full-attention layers' blocks in order, -1 for the others
   */
  public int pageBlock(int layer, boolean windowedSwa) {
    Objects.checkIndex(layer, layers.size());
    if (!windowedSwa) {
      return layer;
    }
    if (layers.get(layer).kind() != Kind.FULL) {
      return -1;
    }
    int block = 0;
    for (int l = 0; l < layer; l++) {
      block += layers.get(l).kind() == Kind.FULL ? 1 : 0;
    }
    return block;
  }

  /**
   * Whether the cache must keep state snapshots at node ends for a request to resume: with a
   * recurrent layer (its state), and with {@code windowedSwa} and an SWA layer (its window).
   *
   * @param windowedSwa whether SWA KV is kept as windows
   * @return true if a match is usable only at a snapshot
   */
  public boolean needsSnapshots(boolean windowedSwa) {
    return hasRecurrent() || (windowedSwa && hasSwa());
  }

  /**
   * The bytes of one snapshot of a rank's shard with {@code windowedSwa} (docs/HYBRID.md §4): per
   * recurrent layer its state ({@code channels x 8} bytes), per SWA layer of window {@code W} the
   * K and V vectors of the {@code W - 1} positions before the snapshot's position, which are all
   * a request resuming there reads of that layer. They follow each other in layer order.
   *
   * @param channels the shard's K (or V) vector elements: its heads times the head dimension
   * @param vectorBytes bytes of one K (or V) vector of the shard
   * @return the bytes, 0 for a mix of full layers
   */
  public long windowSnapshotBytes(int channels, long vectorBytes) {
    long total = 0;
    for (Layer l : layers) {
      total += stateBytes(l, channels, vectorBytes);
    }
    return total;
  }

  /**
   * The page slots one windowed snapshot of a rank's shard takes (docs/HYBRID.md §4): {@link
   * #windowSnapshotBytes} over the bytes of a page slot of {@link #pageLayers pageLayers(true)}
   * blocks, at least 1.
   *
   * @param shape the shard's KV layout: its heads, head dimension, element bytes and page size
   *     (its layer count is not read)
   * @return the slots
   * @throws IllegalArgumentException if they are more than an int counts
   */
  public int windowSnapshotSlots(io.kvtier.spi.KvLayout shape) {
    Objects.requireNonNull(shape, "shape");
    long bytes =
        windowSnapshotBytes((int) ((long) shape.kvHeads() * shape.headDim()), shape.vectorBytes());
    long slotBytes = pageLayers(true) * shape.pageBytesPerLayer();
    long slots = Math.max(1, (bytes + slotBytes - 1) / slotBytes);
    if (slots > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "one snapshot of the SWA windows of " + this + " takes " + slots + " page slots");
    }
    return (int) slots;
  }

  /**
   * Where layer {@code layer}'s part of a windowed snapshot starts, in bytes (see {@link
   * #windowSnapshotBytes}).
   *
   * @param layer the layer
   * @param channels the K (or V) channels of a rank's shard
   * @param vectorBytes bytes of one K (or V) vector of the shard
   * @return the offset in the snapshot's byte stream
   */
  public long windowSnapshotOffset(int layer, int channels, long vectorBytes) {
    long at = 0;
    for (int l = 0; l < layer; l++) {
      at += stateBytes(layers.get(l), channels, vectorBytes);
    }
    return at;
  }

  private static long stateBytes(Layer l, int channels, long vectorBytes) {
    return switch (l.kind()) {
      case FULL -> 0;
      case RECURRENT -> (long) channels * Long.BYTES;
      case SWA -> 2L * (l.window() - 1) * vectorBytes;
    };
  }

  /**
   * The conservative rule for a cache without recurrent-state snapshots (the serving path uses
   * the cache's usable length instead, docs/HYBRID.md §5; the runner keeps this for a step given
   * no snapshot): how much of a matched prefix the model can resume from exactly, given that the
   * cache keeps every full and SWA page of a prefix it holds and no recurrent state. Full and SWA layers resume anywhere their KV is (SWA needs only the last
   * window, which is there since no page is dropped). A recurrent layer resumes only where its
   * state at that position is known, and the cache keeps none, so the model recomputes the whole
   * prefix (reading, never rewriting, the cached KV). The engine reports this as the cached
   * tokens and the match as the matched tokens, so a 0% usable hit rate is visible.
   *
   * @param matchedTokens the prefix the cache matched
   * @return {@code matchedTokens}, or 0 with a recurrent layer
   */
  public int usablePrefix(int matchedTokens) {
    if (matchedTokens < 0) {
      throw new IllegalArgumentException("matchedTokens=" + matchedTokens + " must be >= 0");
    }
    return hasRecurrent() ? 0 : matchedTokens;
  }

  /** The mix as {@link #parse} reads it: {@code full,swa:64,recurrent}. */
  @Override
  public String toString() {
    StringJoiner j = new StringJoiner(",");
    layers.forEach(l -> j.add(l.toString()));
    return j.toString();
  }
}
