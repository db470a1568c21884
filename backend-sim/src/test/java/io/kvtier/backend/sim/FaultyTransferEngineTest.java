package io.kvtier.backend.sim;

import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.asserting.FaultPlan;
import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import io.kvtier.testkit.SeedExtension;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Slow, stuck, stalled and failing batches over a fake engine and a hand-driven clock. */
@ExtendWith(SeedExtension.class)
class FaultyTransferEngineTest {

  private final ManualTransferEngine fake = new ManualTransferEngine();
  private final AtomicLong now = new AtomicLong();

  private FaultyTransferEngine engine(FaultPlan plan) {
    return new FaultyTransferEngine(fake, plan, now::get);
  }

  private static TransferBatch batch(TransferDirection direction, int page) {
    return TransferBatch.allLayers(direction, new int[] {page}, new int[] {page});
  }

  @Test
  void failNextFailsOneBatchOfThatDirection() throws Exception {
    FaultyTransferEngine e = engine(FaultPlan.none());
    e.failNext(DEVICE_TO_HOST);
    TransferHandle failed = e.submit(batch(DEVICE_TO_HOST, 0));
    TransferHandle fine = e.submit(batch(DEVICE_TO_HOST, 1));
    TransferHandle other = e.submit(batch(HOST_TO_DEVICE, 2));
    assertThat(failed.isDone()).as("not done before the delegate's copy").isFalse();
    assertThat(failed.failure()).isEmpty();
    fake.complete(DEVICE_TO_HOST, 0, false);
    fake.complete(DEVICE_TO_HOST, 1, false);
    fake.complete(HOST_TO_DEVICE, 0, false);
    assertThat(failed.isDone()).isTrue();
    assertThat(failed.failure())
        .get()
        .asString()
        .contains("injected failure of DEVICE_TO_HOST" + " seq 0");
    assertThatThrownBy(failed::await).isInstanceOf(TransferFailedException.class);
    fine.await();
    other.await();
    assertThat(fine.failure()).isEmpty();
    assertThat(e.count(FaultyTransferEngine.Fault.FAIL)).isEqualTo(1);
    assertThat(e.count(FaultyTransferEngine.Fault.NONE)).isEqualTo(2);
  }

  @Test
  void stallHoldsADirectionUntilRelease() {
    FaultyTransferEngine e = engine(FaultPlan.none());
    e.stall(HOST_TO_DEVICE);
    TransferHandle held = e.submit(batch(HOST_TO_DEVICE, 0));
    TransferHandle free = e.submit(batch(DEVICE_TO_HOST, 0));
    fake.complete(HOST_TO_DEVICE, 0, false);
    fake.complete(DEVICE_TO_HOST, 0, false);
    assertThat(held.isDone()).isFalse();
    assertThat(free.isDone()).as("the other direction is not stalled").isTrue();
    assertThat(e.inFlight()).isEqualTo(1);
    e.release(HOST_TO_DEVICE);
    assertThat(held.isDone()).isTrue();
    TransferHandle after = e.submit(batch(HOST_TO_DEVICE, 1));
    fake.complete(HOST_TO_DEVICE, 1, false);
    assertThat(after.isDone()).as("batches after the release are not stalled").isTrue();
    assertThat(e.inFlight()).isZero();
  }

  @Test
  void aLaterBatchIsNeverDoneBeforeAnEarlierOneEvenIfTheDelegateSaysSo() {
    FaultyTransferEngine e = engine(FaultPlan.none());
    TransferHandle first = e.submit(batch(DEVICE_TO_HOST, 0));
    TransferHandle second = e.submit(batch(DEVICE_TO_HOST, 1));
    fake.complete(DEVICE_TO_HOST, 1, false);
    assertThat(second.isDone()).isFalse();
    fake.complete(DEVICE_TO_HOST, 0, false);
    assertThat(second.isDone()).isTrue();
    assertThat(first.isDone()).isTrue();
  }

  @Test
  void slowBatchesCompleteAfterTheirDelayInTheTimeSource() throws Exception {
    FaultyTransferEngine e = engine(new FaultPlan(1, 0, 1.0, Duration.ofNanos(100), 0));
    TransferHandle h = e.submit(batch(HOST_TO_DEVICE, 0));
    fake.complete(HOST_TO_DEVICE, 0, false);
    now.addAndGet(99);
    assertThat(h.isDone()).isFalse();
    assertThat(h.await(Duration.ZERO)).as("await(0) while slow").isFalse();
    now.addAndGet(1);
    assertThat(h.isDone()).isTrue();
    assertThat(h.await(Duration.ZERO)).isTrue();
    assertThat(e.count(FaultyTransferEngine.Fault.SLOW)).isEqualTo(1);
  }

  @Test
  void stuckBatchesWaitForReleaseOrClose() {
    FaultyTransferEngine e = engine(new FaultPlan(1, 0, 0, Duration.ZERO, 1.0));
    TransferHandle a = e.submit(batch(DEVICE_TO_HOST, 0));
    TransferHandle b = e.submit(batch(DEVICE_TO_HOST, 1));
    fake.complete(DEVICE_TO_HOST, 0, false);
    fake.complete(DEVICE_TO_HOST, 1, false);
    assertThat(a.isDone()).isFalse();
    e.releaseStuck();
    assertThat(a.isDone()).isTrue();
    assertThat(b.isDone()).isTrue();
    TransferHandle c = e.submit(batch(DEVICE_TO_HOST, 2));
    fake.complete(DEVICE_TO_HOST, 2, false);
    assertThat(c.isDone()).isFalse();
    e.close();
    assertThat(c.isDone()).as("close lets stuck batches finish").isTrue();
    assertThat(fake.closed).isTrue();
    assertThatThrownBy(() -> e.submit(batch(DEVICE_TO_HOST, 3)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  @Test
  void theSameSeedInjectsTheSameFaults(Random random) {
    long seed = random.nextLong();
    FaultPlan plan = new FaultPlan(seed, 0.25, 0.25, Duration.ofNanos(5), 0.25);
    FaultyTransferEngine one = new FaultyTransferEngine(new ManualTransferEngine(), plan, now::get);
    FaultyTransferEngine two = new FaultyTransferEngine(new ManualTransferEngine(), plan, now::get);
    int n = 200;
    for (int i = 0; i < n; i++) {
      TransferDirection d = i % 3 == 0 ? HOST_TO_DEVICE : DEVICE_TO_HOST;
      one.submit(batch(d, i));
      two.submit(batch(d, i));
      for (FaultyTransferEngine.Fault f : FaultyTransferEngine.Fault.values()) {
        assertThat(one.count(f))
            .as("%s after %d batches, seed %d", f, i + 1, seed)
            .isEqualTo(two.count(f));
      }
    }
    long total = 0;
    for (FaultyTransferEngine.Fault f : FaultyTransferEngine.Fault.values()) {
      total += one.count(f);
    }
    assertThat(total).isEqualTo(n);
    assertThat(one.count(FaultyTransferEngine.Fault.STALLED)).isZero();
  }

  @Test
  void aPlanWithoutProbabilitiesInjectsNothing() {
    assertThat(FaultPlan.none().injectsAny()).isFalse();
    assertThat(new FaultPlan(0, 0, 0.1, Duration.ZERO, 0).injectsAny()).isTrue();
    assertThatThrownBy(() -> new FaultPlan(0, -0.1, 0, Duration.ZERO, 0))
        .hasMessageContaining("failProbability=-0.1 must be between 0 and 1");
    assertThatThrownBy(() -> new FaultPlan(0, 0, 0, Duration.ofNanos(-1), 0))
        .hasMessageContaining("slowDelay=PT-0.000000001S must not be negative");
  }
}
