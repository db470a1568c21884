package io.kvtier.store.internal;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PageKey;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class StoreArgumentsTest {

  private static final KvLayout LAYOUT = new KvLayout(2, 1, 4, 2, 2);
  private final TestHostMemory host = new TestHostMemory(LAYOUT, 4, MemoryLayout.PAGE_FIRST);
  private final List<PageKey> two = TestHostMemory.keys(2, 1);

  @AfterEach
  void close() {
    host.close();
  }

  @Test
  void acceptsAWellFormedBatch() {
    assertThatCode(() -> StoreArguments.checkBatch("put", LAYOUT, two, host, new int[] {3, 0}))
        .doesNotThrowAnyException();
    assertThatCode(() -> StoreArguments.checkBatch("get", LAYOUT, List.of(), host, new int[0]))
        .doesNotThrowAnyException();
  }

  @Test
  void rejectsLengthsThatDifferNamingBoth() {
    assertThatThrownBy(() -> StoreArguments.checkBatch("get", LAYOUT, two, host, new int[] {1}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("get: keys.size()=2 but hostPages.length=1");
  }

  @Test
  void rejectsAHostPageOutsideThePool() {
    assertThatThrownBy(() -> StoreArguments.checkBatch("put", LAYOUT, two, host, new int[] {0, 4}))
        .isInstanceOf(IndexOutOfBoundsException.class)
        .hasMessageContaining("hostPages[1]=4 is outside the host pool of 4 pages");
    assertThatThrownBy(() -> StoreArguments.checkBatch("put", LAYOUT, two, host, new int[] {-1, 0}))
        .isInstanceOf(IndexOutOfBoundsException.class)
        .hasMessageContaining("hostPages[0]=-1");
  }

  @Test
  void rejectsAPoolOfAnotherLayout() {
    KvLayout other = new KvLayout(3, 1, 4, 2, 2);
    assertThatThrownBy(() -> StoreArguments.checkBatch("put", other, two, host, new int[] {0, 1}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("host pool's layout " + LAYOUT)
        .hasMessageContaining("store's " + other);
  }

  @Test
  void rejectsNullsNamingWhichOne() {
    assertThatThrownBy(() -> StoreArguments.checkKeys("existsPrefix", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("existsPrefix: keys is null");
    List<PageKey> withNull = Arrays.asList(two.get(0), null);
    assertThatThrownBy(() -> StoreArguments.checkKeys("existsPrefix", withNull))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("existsPrefix: keys[1] is null");
    assertThatThrownBy(() -> StoreArguments.checkBatch("get", LAYOUT, two, null, new int[2]))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("get: host is null");
    assertThatThrownBy(() -> StoreArguments.checkBatch("get", LAYOUT, two, host, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("get: hostPages is null");
  }

  @Test
  void rejectsPagesBeyondAnIntForStoresThatWeighInInts() {
    KvLayout huge = new KvLayout(1024, 64, 256, 8, 256);
    assertThatThrownBy(() -> StoreArguments.pageBytesAsInt("memory", huge))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pageBytes=" + huge.pageBytes());
  }
}
