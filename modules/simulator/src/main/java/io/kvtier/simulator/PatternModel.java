package io.kvtier.simulator;

import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageMemory;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The simulator's model: the KV of a token in a layer is a byte pattern derived from (a hash of
 * the token's whole prefix and namespace, the layer, the position), so a page holds the right
 * bytes only if it was computed for exactly that prefix. It writes the pattern of each computed
 * token into the request's device pages, and checks every page of a prefix that came back from
 * the host; a page that was freed, reused, copied too early or loaded from the wrong slot shows
 * up as a mismatch. Greedy decoding is a hash of the prefix, identical on every rank.
 *
 * <p>Recurrent-state snapshots (HYBRID.md §5, §8), with {@link #snapshotSlots()} above 0: the
 * "state" after positions {@code [0, e)} is a pattern derived from the hash of that prefix (and
 * namespace), the layer, the slot's index in the snapshot and {@code e}, filling each layer's
 * whole block of each slot. For every {@link ModelStep.Snapshot} of a step the model writes it
 * into the snapshot's slots, layer by layer as the step's layers are written; on a request's
 * first step with {@code from > 0} it checks, layer by layer, that the {@link
 * ModelStep#resumeSlots()} hold the state after {@code [0, from)}, as a real runner would load
 * it there. A resume whose state is wrong in any byte of any slot or layer, or a first step with
 * {@code from > 0} and no resume slots (no state to start from), is a snapshot mismatch ({@link
 * #snapshotMismatches()}), which fails the run as a KV mismatch does. This rank's counters
 * only: the simulator sums them over ranks.
 */
final class PatternModel implements ModelRunner {
  private final PageMemory device;
  private final KvLayout layout;
  private final int vocab;
  private final int vector;
  private final int snapshotSlots;

  /** Prefix hashes per live request, grown as tokens are computed; never iterated. */
  private final Map<Long, long[]> hashes = new HashMap<>();

  /** Live requests whose first step ran: a later step never resumes. */
  private final Set<Long> started = new HashSet<>();

  /**
   * The request whose step is resuming, between its layer 0 and its last layer (the engine
   * writes every layer of one request's step before the next request's), -1 for none; and
   * whether a layer already found its state wrong (one mismatch per resume).
   */
  private long resumeId = -1;

  private boolean resumeWrong;

  private long snapshotsWritten;
  private long snapshotsVerified;
  private long snapshotMismatches;

  PatternModel(PageMemory device, int vocab) {
    this(device, vocab, 0);
  }

  /**
   * A model with recurrent-state snapshots of {@code snapshotSlots} page slots each.
   *
   * @param device the device pool
   * @param vocab the vocabulary size
   * @param snapshotSlots page slots per snapshot, 0 for a model without recurrent state
   */
  PatternModel(PageMemory device, int vocab, int snapshotSlots) {
    if (snapshotSlots < 0) {
      throw new IllegalArgumentException("snapshotSlots=" + snapshotSlots + " must be >= 0");
    }
    this.device = device;
    this.layout = device.spec().layout();
    this.vocab = vocab;
    this.vector = (int) layout.vectorBytes();
    this.snapshotSlots = snapshotSlots;
  }

  @Override
  public int layers() {
    return layout.layers();
  }

  @Override
  public int snapshotSlots() {
    return snapshotSlots;
  }

  /** Snapshots written (one per snapshot of a step, all its slots and layers). */
  long snapshotsWritten() {
    return snapshotsWritten;
  }

  /** Resumes whose state was checked: first steps with {@code from > 0} under snapshots. */
  long snapshotsVerified() {
    return snapshotsVerified;
  }

  /** Checked resumes whose state was wrong, or missing. */
  long snapshotMismatches() {
    return snapshotMismatches;
  }

  @Override
  public void writeLayer(ModelStep step, int layer) {
    long[] h = hashes(step, step.to());
    if (snapshotSlots > 0) {
      resume(step, layer, h);
    }
    int pageSize = layout.pageSize();
    for (int first = step.from(); first < step.to(); ) {
      int page = first / pageSize;
      int last = Math.min(step.to(), (page + 1) * pageSize);
      int count = last - first;
      byte[] keys = new byte[count * vector];
      byte[] values = new byte[count * vector];
      for (int t = 0; t < count; t++) {
        int pos = first + t;
        for (int b = 0; b < vector; b++) {
          keys[t * vector + b] = value(h[pos], layer, pos, b);
          values[t * vector + b] = value(h[pos], layer, pos, vector + b);
        }
      }
      int slot = step.pageTable()[page];
      int inPage = first - page * pageSize;
      device.write(slot, layer, layout.keyOffset(inPage), MemorySegment.ofArray(keys));
      device.write(slot, layer, layout.valueOffset(inPage), MemorySegment.ofArray(values));
      first = last;
    }
    for (ModelStep.Snapshot snapshot : step.snapshots()) {
      int[] slots = snapshot.slots();
      for (int i = 0; i < slots.length; i++) {
        device.write(
            slots[i], layer, 0, MemorySegment.ofArray(state(h, snapshot.position(), layer, i)));
      }
      if (layer == layout.layers() - 1) {
        snapshotsWritten++;
      }
    }
  }

  /**
   * On each step, before the layer's KV: a request's first step that starts at {@code from > 0}
   * loads its state from the resume slots, layer by layer, so each layer's blocks must hold the
   * state after exactly {@code [0, from)}. Resume slots on any other step, or none (or too few)
   * on such a first step, are a mismatch too: there is no state to start from.
   */
  private void resume(ModelStep step, int layer, long[] h) {
    long id = step.requestId();
    if (layer == 0) {
      resumeId = -1;
      boolean first = started.add(id);
      boolean resumes = first && step.from() > 0;
      int[] slots = step.resumeSlots();
      if (resumes || slots.length > 0) {
        snapshotsVerified++;
        if (!resumes || slots.length != snapshotSlots) {
          snapshotMismatches++;
          return;
        }
        resumeId = id;
        resumeWrong = false;
      }
    }
    if (resumeId != id || resumeWrong) {
      return;
    }
    byte[] actual = new byte[(int) layout.pageBytesPerLayer()];
    int[] slots = step.resumeSlots();
    for (int i = 0; i < slots.length; i++) {
      device.read(slots[i], layer, 0, MemorySegment.ofArray(actual));
      if (!Arrays.equals(actual, state(h, step.from(), layer, i))) {
        resumeWrong = true;
        snapshotMismatches++;
        return;
      }
    }
  }

  /**
   * The pattern of slot {@code index} of the state after positions {@code [0, position)} in
   * {@code layer}: a whole layer block.
   */
  private byte[] state(long[] h, int position, int layer, int index) {
    byte[] block = new byte[(int) layout.pageBytesPerLayer()];
    long prefix = mix(h[position - 1] ^ 0x57A7E5L) + index * 0x9E3779B97F4A7C15L;
    for (int b = 0; b < block.length; b++) {
      block[b] = value(prefix, layer, position, b);
    }
    return block;
  }

  @Override
  public int nextToken(ModelStep step) {
    if (step.to() == 0) {
      return 0;
    }
    long h = hashes(step, step.to())[step.to() - 1];
    return (int) Long.remainderUnsigned(mix(h ^ 0x5EEDL), vocab);
  }

  @Override
  public int verifyPrefix(ModelStep step) {
    long[] h = hashes(step, step.to());
    int pageSize = layout.pageSize();
    int pages = step.to() / pageSize;
    int wrong = 0;
    byte[] actual = new byte[(int) layout.pageBytesPerLayer()];
    for (int page = 0; page < pages; page++) {
      for (int layer = 0; layer < layout.layers(); layer++) {
        device.read(step.pageTable()[page], layer, 0, MemorySegment.ofArray(actual));
        if (!Arrays.equals(actual, expected(h, page, layer))) {
          wrong++;
          break;
        }
      }
    }
    return wrong;
  }

  @Override
  public void released(long requestId) {
    hashes.remove(requestId);
    started.remove(requestId);
  }

  private byte[] expected(long[] h, int page, int layer) {
    byte[] block = new byte[(int) layout.pageBytesPerLayer()];
    int pageSize = layout.pageSize();
    for (int j = 0; j < pageSize; j++) {
      int pos = page * pageSize + j;
      int k = (int) layout.keyOffset(j);
      int v = (int) layout.valueOffset(j);
      for (int b = 0; b < vector; b++) {
        block[k + b] = value(h[pos], layer, pos, b);
        block[v + b] = value(h[pos], layer, pos, vector + b);
      }
    }
    return block;
  }

  /** The prefix hashes of the step's request up to {@code length} tokens. */
  private long[] hashes(ModelStep step, int length) {
    long[] h = hashes.get(step.requestId());
    int known = h == null ? 0 : h.length;
    if (known >= length) {
      return h;
    }
    long[] grown = h == null ? new long[length] : Arrays.copyOf(h, length);
    long running =
        known == 0
            ? 0x243F6A8885A308D3L ^ step.namespace() * 0x9E3779B97F4A7C15L
            : grown[known - 1];
    for (int i = known; i < length; i++) {
      running = mix(running ^ step.tokens()[i]) + i;
      grown[i] = running;
    }
    hashes.put(step.requestId(), grown);
    return grown;
  }

  private static byte value(long hash, int layer, int pos, int index) {
    long z = hash + layer * 0x632BE59BD9B4E019L + pos * 0x85EBCA77C2B2AE63L + index;
    z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
    return (byte) (z ^ (z >>> 29));
  }

  private static long mix(long x) {
    long z = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
