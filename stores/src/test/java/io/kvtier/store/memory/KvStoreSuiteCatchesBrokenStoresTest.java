package io.kvtier.store.memory;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.MemoryLayout;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.conformance.KvStoreConformanceSuite;
import java.util.Random;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The store suite fails on stores with a deliberate defect: its checks can fail. Each test runs
 * one check directly on a suite over a broken store.
 */
@ExtendWith(SeedExtension.class)
class KvStoreSuiteCatchesBrokenStoresTest {

  private static KvStoreConformanceSuite suiteOver(BrokenStores.Defect defect) {
    return new BrokenStores.Suite(defect);
  }

  private static void expectFailure(KvStoreConformanceSuite suite, ThrowingCallable check)
      throws Exception {
    try {
      assertThatThrownBy(check).isInstanceOf(AssertionError.class);
    } finally {
      suite.closeOpened();
    }
  }

  @Test
  void existsPrefixThatCountsPastAGapFails(Random random) throws Exception {
    var suite = suiteOver(BrokenStores.Defect.EXISTS_COUNTS_PAST_GAPS);
    expectFailure(suite, () -> suite.existsPrefixStopsAtTheFirstGap(random));
  }

  @Test
  void getThatSkipsAnAbsentPageFails(Random random) throws Exception {
    var suite = suiteOver(BrokenStores.Defect.GET_SKIPS_ABSENT_PAGES);
    expectFailure(suite, () -> suite.getStopsAtTheFirstAbsentPage(random));
  }

  @Test
  void getThatCopiesNothingFails(Random random) throws Exception {
    var suite = suiteOver(BrokenStores.Defect.GET_COPIES_NOTHING);
    expectFailure(suite, () -> suite.putThenGetRoundTrip(MemoryLayout.PAGE_FIRST, random));
  }

  @Test
  void putThatIgnoresALengthMismatchFails(Random random) throws Exception {
    var suite = suiteOver(BrokenStores.Defect.PUT_IGNORES_A_LENGTH_MISMATCH);
    expectFailure(suite, () -> suite.badArgumentsAreRejectedBeforeAnythingHappens(random));
  }
}
