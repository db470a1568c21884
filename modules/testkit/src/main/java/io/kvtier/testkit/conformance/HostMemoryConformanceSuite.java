package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.testkit.SeedExtension;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The conformance suite of a {@link HostMemoryProvider}. A provider module runs it with a
 * subclass:
 *
 * <pre>{@code
 * class SimHostMemoryConformanceTest extends HostMemoryConformanceSuite {
 *   protected HostMemoryProvider provider() { return new SimHostMemoryProvider(); }
 * }
 * }</pre>
 *
 * <p>When the provider is unavailable every check is skipped with its reason.
 */
@ExtendWith(SeedExtension.class)
@Timeout(60)
public abstract class HostMemoryConformanceSuite {

  /** For subclasses. */
  protected HostMemoryConformanceSuite() {}

  /**
   * The provider under test.
   *
   * @return the provider
   */
  protected abstract HostMemoryProvider provider();

  /**
   * The context handed to the provider.
   *
   * @return {@link BackendContext#defaults()} unless overridden
   */
  protected BackendContext context() {
    return BackendContext.defaults();
  }

  /**
   * The KV layout of the pools the suite opens.
   *
   * @return 2 layers, 1 KV head, head dim 8, 2-byte elements, 4 tokens per page
   */
  protected KvLayout layout() {
    return new KvLayout(2, 1, 8, 2, 4);
  }

  /**
   * Pages of the pools the suite opens.
   *
   * @return 10 unless overridden
   */
  protected int pages() {
    return 10;
  }

  /** Skips every check, with the provider's reason, when the provider cannot run here. */
  @BeforeEach
  public void requireAvailableProvider() {
    Availability a = provider().availability();
    DeviceSuiteBase.skipUnless(
        a.available(), "host provider '" + provider().name() + "' is unavailable: " + a.reason());
  }

  private HostMemory open(MemoryLayout memoryLayout) {
    return provider().open(new PoolSpec(layout(), pages(), memoryLayout), context());
  }

  /** The provider's {@code name()} equals its {@link io.kvtier.spi.ProviderName}. */
  @Test
  public void providerNamesItselfAsAnnotated() {
    ProviderChecks.assertNamedAsAnnotated(provider());
  }

  /**
   * A new pool has its spec and is zero-filled.
   *
   * @param memoryLayout the pool's layout
   */
  @ParameterizedTest
  @EnumSource(MemoryLayout.class)
  public void openedPoolHasItsSpecAndIsZeroFilled(MemoryLayout memoryLayout) {
    try (HostMemory host = open(memoryLayout)) {
      assertThat(host.spec()).isEqualTo(new PoolSpec(layout(), pages(), memoryLayout));
      PoolChecks.assertZeroFilled(host, "host");
    }
  }

  /**
   * Every block reads back what was written to it; partial writes and reads touch their range.
   *
   * @param memoryLayout the pool's layout
   * @param random seeded by the test's seed
   */
  @ParameterizedTest
  @EnumSource(MemoryLayout.class)
  public void writeReadRoundTrip(MemoryLayout memoryLayout, Random random) {
    try (HostMemory host = open(memoryLayout)) {
      PoolChecks.assertRoundTrip(host, "host", random);
      PoolChecks.assertPartialWriteAndRead(host, "host", random);
    }
  }

  /**
   * {@code block()} is a segment of one block's size that aliases the block: writes through
   * either side show on the other, and writing one block's segment leaves the others alone.
   *
   * @param memoryLayout the pool's layout
   * @param random seeded by the test's seed
   */
  @ParameterizedTest
  @EnumSource(MemoryLayout.class)
  public void blockAliasesReadAndWrite(MemoryLayout memoryLayout, Random random) {
    try (HostMemory host = open(memoryLayout)) {
      long size = layout().pageBytesPerLayer();
      byte[][][] written = new byte[pages()][layout().layers()][];
      for (int p = 0; p < pages(); p++) {
        for (int l = 0; l < layout().layers(); l++) {
          MemorySegment block = host.block(p, l);
          assertThat(block.byteSize()).as("block(%d, %d).byteSize()", p, l).isEqualTo(size);
          written[p][l] = Blocks.random(host, random);
          if ((p + l) % 2 == 0) {
            MemorySegment.copy(MemorySegment.ofArray(written[p][l]), 0, block, 0, size);
          } else {
            Blocks.write(host, p, l, written[p][l]);
          }
        }
      }
      for (int p = 0; p < pages(); p++) {
        for (int l = 0; l < layout().layers(); l++) {
          assertThat(Blocks.read(host, p, l))
              .as("read() of %s", Blocks.where("host", p, l))
              .isEqualTo(written[p][l]);
          assertThat(host.block(p, l).toArray(ValueLayout.JAVA_BYTE))
              .as("block() of %s", Blocks.where("host", p, l))
              .isEqualTo(written[p][l]);
        }
      }
    }
  }

  /** Out-of-range arguments of read, write and block throw {@link IndexOutOfBoundsException}. */
  @Test
  public void outOfRangeArgumentsThrowIndexOutOfBounds() {
    try (HostMemory host = open(MemoryLayout.LAYER_FIRST)) {
      PoolChecks.assertBoundsChecked(host);
      PoolChecks.expectOutOfRange(
          () -> host.block(pages() + 2, 0), String.valueOf(pages() + 2), "block(page=pages+2)");
      PoolChecks.expectOutOfRange(() -> host.block(0, -4), "-4", "block(layer=-4)");
    }
  }

  /** A closed pool throws {@link IllegalStateException} on use; close is idempotent. */
  @Test
  public void closedPoolThrowsIllegalState() {
    HostMemory host = open(MemoryLayout.PAGE_FIRST);
    host.close();
    host.close();
    PoolChecks.assertClosed(host);
    assertThatThrownBy(() -> host.block(0, 0))
        .as("block() on a closed pool")
        .isInstanceOf(IllegalStateException.class);
  }

  /** A property of the provider's namespace that it does not know is rejected, naming the key. */
  @Test
  public void unknownPropertyIsRejected() {
    String key = provider().configNamespace() + ".conformance-no-such-key";
    BackendContext base = context();
    BackendContext bad =
        new BackendContext(base.rank(), Map.of(key, "1"), base.time(), base.metrics());
    assertThatThrownBy(
            () ->
                provider()
                    .open(new PoolSpec(layout(), pages(), MemoryLayout.PAGE_FIRST), bad)
                    .close())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(key);
  }
}
