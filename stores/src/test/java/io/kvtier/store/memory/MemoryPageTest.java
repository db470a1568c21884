package io.kvtier.store.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MemoryPageTest {

  private final MemorySlab slab = new MemorySlab(64);

  @AfterEach
  void close() {
    slab.close();
  }

  @Test
  void theLastReleaseRecyclesTheSegmentAndNothingEarlier() {
    MemorySegment data = slab.take();
    MemoryPage page = new MemoryPage(data, slab, 0);
    assertThat(page.pin()).isTrue();
    assertThat(page.pin()).isTrue();
    page.release();
    page.release();
    assertThat(slab.isFree(data)).as("one reference is left").isFalse();
    page.release();
    assertThat(slab.isFree(data)).isTrue();
    assertThat(page.references()).isZero();
  }

  @Test
  void aReleasedPageCannotBePinnedAgain() {
    MemoryPage page = new MemoryPage(slab.take(), slab, 0);
    page.release();
    assertThat(page.pin()).as("a stale page whose segment may hold another page").isFalse();
    assertThatThrownBy(page::release)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("released more often than pinned");
  }

  @Test
  void theSlabReusesFreedSegmentsBeforeAllocating() {
    MemorySegment first = slab.take();
    MemorySegment second = slab.take();
    assertThat(slab.allocatedPages()).isEqualTo(2);
    slab.recycle(first);
    assertThat(slab.take().address()).isEqualTo(first.address());
    assertThat(slab.allocatedPages()).isEqualTo(2);
    assertThat(second.byteSize()).isEqualTo(64);
  }
}
