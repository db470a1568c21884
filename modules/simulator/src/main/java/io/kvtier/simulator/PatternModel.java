package io.kvtier.simulator;

import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageMemory;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The simulator's model: the KV of a token in a layer is a byte pattern derived from (a hash of
 * the token's whole prefix and namespace, the layer, the position), so a page holds the right
 * bytes only if it was computed for exactly that prefix. It writes the pattern of each computed
 * token into the request's device pages, and checks every page of a prefix that came back from
 * the host; a page that was freed, reused, copied too early or loaded from the wrong slot shows
 * up as a mismatch. Greedy decoding is a hash of the prefix, identical on every rank.
 */
final class PatternModel implements ModelRunner {
  private final PageMemory device;
  private final KvLayout layout;
  private final int vocab;
  private final int vector;

  /** Prefix hashes per live request, grown as tokens are computed; never iterated. */
  private final Map<Long, long[]> hashes = new HashMap<>();

  PatternModel(PageMemory device, int vocab) {
    this.device = device;
    this.layout = device.spec().layout();
    this.vocab = vocab;
    this.vector = (int) layout.vectorBytes();
  }

  @Override
  public int layers() {
    return layout.layers();
  }

  @Override
  public void writeLayer(ModelStep step, int layer) {
    long[] h = hashes(step, step.to());
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
