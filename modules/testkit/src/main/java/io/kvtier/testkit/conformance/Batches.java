package io.kvtier.testkit.conformance;

import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferHandle;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Random;
import java.util.stream.IntStream;

/** Small builders of batches and page orders for the transfer checks. */
final class Batches {

  private Batches() {}

  static TransferBatch single(TransferDirection direction, int devicePage, int hostPage) {
    return new TransferBatch(
        direction, new int[] {devicePage}, new int[] {hostPage}, OptionalInt.empty());
  }

  static int[] permutation(int n, Random random) {
    int[] p = IntStream.range(0, n).toArray();
    for (int i = n - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
    return p;
  }

  /** Empty per-direction lists of handles, for a scenario to fill in submission order. */
  static Map<TransferDirection, List<TransferHandle>> byDirection() {
    Map<TransferDirection, List<TransferHandle>> m = new EnumMap<>(TransferDirection.class);
    for (TransferDirection d : TransferDirection.values()) {
      m.put(d, new ArrayList<>());
    }
    return m;
  }
}
