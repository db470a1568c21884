package io.kvtier.simulator.replay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.simulator.replay.ReplayResult.Kind;
import io.kvtier.simulator.replay.ReplayResult.Tier;
import io.kvtier.simulator.workload.BlockHashTrace;
import io.kvtier.simulator.workload.Workloads;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PageKey;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ReplayTest {
  private static final EvictionPolicy LRU = EvictionPolicy.LRU;
  private static final WritePolicy WT = WritePolicy.WRITE_THROUGH;

  /** A trace whose working set (about 27,000 blocks) is far above the capacities below. */
  private static final ReplayTrace TRACE =
      ReplayTrace.of(BlockLruModelTest.generate(new Random(7), 1500), Integer.MAX_VALUE);

  @Test
  void aHostTierServesWhatTheDeviceEvictedAndTheTiersAddUp() {
    ReplayResult deviceOnly =
        Replay.runOne(TRACE, ReplayConfiguration.of(512, 200 * 512, 0, 0, LRU, WT));
    ReplayResult withHost =
        Replay.runOne(TRACE, ReplayConfiguration.of(512, 200 * 512, 2000 * 512, 0, LRU, WT));

    assertThat(deviceOnly.hitTokens(Tier.HOST)).isZero();
    assertThat(deviceOnly.loadBacks()).isZero();
    assertThat(deviceOnly.backups()).isZero();
    assertThat(withHost.hitTokens(Tier.HOST)).isPositive();
    assertThat(withHost.loadBacks()).isPositive();
    assertThat(withHost.backups()).isPositive();
    assertThat(withHost.hitRate(Tier.TOTAL)).isGreaterThan(deviceOnly.hitRate(Tier.TOTAL));
    for (ReplayResult r : List.of(deviceOnly, withHost)) {
      assertThat(r.hitTokens(Tier.TOTAL))
          .isEqualTo(r.deviceHitTokens() + r.hostHitTokens() + r.l3HitTokens())
          .isEqualTo(r.prefillTokensSaved());
      assertThat(r.hitRequests(Tier.TOTAL))
          .isLessThanOrEqualTo(r.requests())
          .isGreaterThanOrEqualTo(Math.max(r.deviceHitRequests(), r.hostHitRequests()));
      assertThat(r.requests()).isEqualTo(1500);
      assertThat(r.promptTokens()).isEqualTo(TRACE.promptTokens());
      assertThat(r.deviceEvictionPages()).isPositive();
    }
  }

  /**
   * With recurrent-state snapshots (HYBRID.md §5, §8) the replay reports the usable part of each
   * match: at most the matched tokens in every tier, the whole match without snapshots, and the
   * same match in an unbounded cache whatever the interval, with fewer usable tokens when
   * snapshots are further apart.
   */
  @Test
  void snapshotsMakePartOfTheMatchUsableAndTheIntervalDecidesHowMuch() {
    ReplayConfiguration base =
        ReplayConfiguration.of(512, 200 * 512, 800 * 512, 4000 * 512, LRU, WT);
    ReplayResult plain = Replay.runOne(TRACE, base);
    assertThat(plain.usableHitTokens(Tier.TOTAL)).isEqualTo(plain.hitTokens(Tier.TOTAL));
    assertThat(plain.usableOfMatched()).isEqualTo(1.0);
    for (int k : new int[] {1, 4, 32}) {
      ReplayResult r = Replay.runOne(TRACE, base.withSnapshots(1, k));
      assertThat(r.usableHitTokens(Tier.TOTAL)).as("interval %d", k).isPositive();
      for (Tier t : Tier.values()) {
        assertThat(r.usableHitTokens(t))
            .as("%s, interval %d", t, k)
            .isLessThanOrEqualTo(r.hitTokens(t));
      }
      assertThat(r.prefillTokensSaved()).isEqualTo(r.usableHitTokens(Tier.TOTAL));
    }
    // Nothing evicted: the match does not depend on the interval, the usable part does.
    ReplayResult every = Replay.runOne(TRACE, Replay.unbounded(TRACE, 512, 1).withSnapshots(1, 1));
    ReplayResult sparse =
        Replay.runOne(TRACE, Replay.unbounded(TRACE, 512, 1).withSnapshots(1, 32));
    assertThat(sparse.hitTokens(Tier.TOTAL)).isEqualTo(every.hitTokens(Tier.TOTAL));
    assertThat(every.usableHitTokens(Tier.TOTAL)).isEqualTo(every.hitTokens(Tier.TOTAL));
    assertThat(sparse.usableHitTokens(Tier.TOTAL)).isLessThan(every.usableHitTokens(Tier.TOTAL));
    assertThat(sparse.deviceEvictionPages()).isZero();
  }

  @Test
  void aSweepOfIntervalsHasOneUnboundedBaselinePerInterval() {
    ReplaySweep sweep =
        new ReplaySweep(
            List.of(512),
            List.of(100L * 512),
            List.of(),
            List.of(2.0),
            List.of(0L),
            List.of(LRU),
            List.of(WT),
            1,
            List.of(2, 8));
    assertThat(sweep.configurations())
        .extracting(ReplayConfiguration::snapshotIntervalPages)
        .containsExactly(2, 8);
    ReplaySummary s = Replay.run(TRACE, sweep.configurations(), 2, (done, total) -> {});
    assertThat(s.baselines())
        .extracting(r -> r.kind() + "/" + r.configuration().snapshotIntervalPages())
        .containsExactly("UNBOUNDED/2", "UNBOUNDED/8", "NO_CACHE/8");
    assertThat(ReplayFormat.table(s)).contains("use/hit");
    assertThatThrownBy(
            () ->
                new ReplaySweep(
                    List.of(512),
                    List.of(100L * 512),
                    List.of(),
                    List.of(2.0),
                    List.of(0L),
                    List.of(LRU),
                    List.of(WT),
                    0,
                    List.of(2, 8)))
        .hasMessageContaining("without snapshots");
    assertThatThrownBy(() -> ReplayConfiguration.of(16, 16, 0, 0, LRU, WT).withSnapshots(1, 8))
        .hasMessageContaining("no more than one snapshot's snapshotSlots=1");
  }

  @Test
  void anL3TierServesWhatBothUpperTiersEvicted() {
    ReplayResult noL3 =
        Replay.runOne(TRACE, ReplayConfiguration.of(512, 100 * 512, 200 * 512, 0, LRU, WT));
    ReplayResult l3 =
        Replay.runOne(
            TRACE, ReplayConfiguration.of(512, 100 * 512, 200 * 512, 40000 * 512, LRU, WT));

    assertThat(noL3.l3HitTokens()).isZero();
    assertThat(l3.l3HitTokens()).isPositive();
    assertThat(l3.l3HitRequests()).isPositive();
    assertThat(l3.l3PagesWritten()).isPositive();
    assertThat(l3.hitRate(Tier.TOTAL)).isGreaterThan(noL3.hitRate(Tier.TOTAL));
  }

  @Test
  void aSweepAddsBothBaselinesPerPageSizeAndRunsAlikeOnOneThreadOrSeveral() {
    List<ReplayConfiguration> sweep =
        new ReplaySweep(
                List.of(256, 512),
                List.of(100L * 512, 400L * 512),
                List.of(),
                List.of(0.0, 2.0),
                List.of(0L),
                List.of(LRU, EvictionPolicy.LFU),
                List.of(WT))
            .configurations();
    assertThat(sweep).hasSize(16);
    assertThat(sweep.get(1).eviction()).isEqualTo(EvictionPolicy.LFU);
    assertThat(sweep.get(2).hostTokens()).isEqualTo(200L * 512);

    ReplaySummary one = Replay.run(TRACE, sweep, 1, ReplayProgress.NONE);
    long[] last = {0, 0};
    ReplaySummary three =
        Replay.run(
            TRACE,
            sweep,
            3,
            (done, total) -> {
              assertThat(done).isGreaterThan(last[0]).isLessThanOrEqualTo(total);
              last[0] = done;
              last[1] = total;
            });

    assertThat(last[0]).isEqualTo(last[1]).isEqualTo(1500L * (16 + 4));
    assertThat(one.sweep()).hasSize(16);
    assertThat(one.baselines())
        .extracting(r -> r.kind() + "/" + r.configuration().pageSize())
        .containsExactly("UNBOUNDED/256", "NO_CACHE/256", "UNBOUNDED/512", "NO_CACHE/512");
    for (int i = 0; i < one.results().size(); i++) {
      ReplayResult a = one.results().get(i);
      ReplayResult b = three.results().get(i);
      assertThat(b.configuration()).isEqualTo(a.configuration());
      assertThat(b.hitTokens(Tier.TOTAL)).isEqualTo(a.hitTokens(Tier.TOTAL));
      assertThat(b.hostEvictionPages()).isEqualTo(a.hostEvictionPages());
    }
    for (ReplayResult r : one.sweep()) {
      ReplayResult ceiling =
          one.baselines().stream()
              .filter(
                  b ->
                      b.kind() == Kind.UNBOUNDED
                          && b.configuration().pageSize() == r.configuration().pageSize())
              .findFirst()
              .orElseThrow();
      assertThat(r.hitTokens(Tier.TOTAL)).isLessThanOrEqualTo(ceiling.hitTokens(Tier.TOTAL));
    }
    ReplayResult noCache = one.baselines().get(1);
    assertThat(noCache.hitTokens(Tier.TOTAL)).isZero();
    assertThat(noCache.requests()).isEqualTo(1500);
  }

  @Test
  void aPromptLongerThanTheDeviceIsAMissAndCachesNothing() {
    ReplayTrace t =
        ReplayTrace.ofPrompts("three", new int[64], new int[8], new int[64], new int[8]);
    ReplayResult r = Replay.runOne(t, ReplayConfiguration.of(8, 32, 0, 0, LRU, WT));
    assertThat(r.rejectedRequests()).isEqualTo(2);
    assertThat(r.deviceHitTokens()).isEqualTo(8);
    assertThat(r.hitRequests()).isEqualTo(1);
  }

  @Test
  void everyEvictionPolicyRunsAndAWorkloadSpecReplays() {
    ReplayTrace t = ReplayTrace.of(Workloads.parse("fixed:multiturn"), 300);
    assertThat(t.cut()).isTrue();
    assertThat(t.size()).isEqualTo(300);
    for (EvictionPolicy p : EvictionPolicy.values()) {
      for (WritePolicy w : WritePolicy.values()) {
        ReplayResult r = Replay.runOne(t, ReplayConfiguration.of(16, 20_000, 40_000, 0, p, w));
        assertThat(r.hitRate(Tier.TOTAL)).as("%s %s", p, w).isBetween(0.0, 1.0);
      }
    }
    assertThat(ReplayTrace.of(Workloads.parse("fixed:multiturn"), 640).cut()).isFalse();
  }

  @Test
  void configurationsRejectWhatTheEngineCannotRun() {
    assertThatThrownBy(() -> new ReplayConfiguration(0, 16, 0, 0, LRU, WT))
        .hasMessageContaining("pageSize=0");
    assertThatThrownBy(() -> new ReplayConfiguration(16, 17, 0, 0, LRU, WT))
        .hasMessageContaining("deviceTokens=17 must be a multiple of pageSize=16");
    assertThatThrownBy(() -> new ReplayConfiguration(16, 16, 0, 16, LRU, WT))
        .hasMessageContaining("needs a host tier");
    assertThatThrownBy(() -> new ReplayConfiguration(16, 16, 0, 0, LRU, WritePolicy.WRITE_BACK))
        .hasMessageContaining("write_back needs a host tier");
    assertThatThrownBy(() -> new ReplayConfiguration(16, 0, 16, 0, LRU, WT))
        .hasMessageContaining("deviceTokens=0 (no cache)");
    assertThat(ReplayConfiguration.of(16, 1_000_000, 4_000_001, 0, LRU, WT).hostTokens())
        .isEqualTo(4_000_000);
    assertThat(ReplayConfiguration.of(16, 1_000_000, 0, 0, LRU, WT).label())
        .isEqualTo("page=16 device=1M host=0 l3=0 lru write_through");
  }

  @Test
  void sweepsRejectMissingOrDoubleAxesAndADeviceBelowAPage() {
    assertThatThrownBy(
            () ->
                new ReplaySweep(
                    List.of(16),
                    List.of(),
                    List.of(),
                    List.of(0.0),
                    List.of(0L),
                    List.of(LRU),
                    List.of(WT)))
        .hasMessageContaining("deviceTokens is empty");
    assertThatThrownBy(
            () ->
                new ReplaySweep(
                    List.of(16),
                    List.of(16L),
                    List.of(16L),
                    List.of(0.0),
                    List.of(0L),
                    List.of(LRU),
                    List.of(WT)))
        .hasMessageContaining("not both");
    assertThatThrownBy(
            () ->
                new ReplaySweep(
                    List.of(16),
                    List.of(16L),
                    List.of(),
                    List.of(),
                    List.of(0L),
                    List.of(LRU),
                    List.of(WT)))
        .hasMessageContaining("no host capacity");
    assertThatThrownBy(
            () ->
                new ReplaySweep(
                    List.of(16),
                    List.of(16L),
                    List.of(),
                    List.of(-1.0),
                    List.of(0L),
                    List.of(LRU),
                    List.of(WT)))
        .hasMessageContaining("host ratio -1.0");
    assertThatThrownBy(
            () ->
                new ReplaySweep(
                        List.of(16),
                        List.of(8L),
                        List.of(),
                        List.of(0.0),
                        List.of(0L),
                        List.of(LRU),
                        List.of(WT))
                    .configurations())
        .hasMessageContaining("device capacity of 8 tokens is less than one page of 16");
    assertThatThrownBy(() -> Replay.run(TRACE, List.of(), 1, ReplayProgress.NONE))
        .hasMessageContaining("no configuration");
    assertThatThrownBy(
            () ->
                Replay.run(
                    TRACE,
                    List.of(ReplayConfiguration.of(16, 16, 0, 0, LRU, WT)),
                    0,
                    ReplayProgress.NONE))
        .hasMessageContaining("threads=0");
  }

  @Test
  void csvAndJsonHoldOneRowPerResult() {
    ReplaySummary s =
        Replay.run(
            TRACE,
            List.of(
                ReplayConfiguration.of(512, 100 * 512, 0, 0, LRU, WT),
                ReplayConfiguration.of(512, 100 * 512, 400 * 512, 0, LRU, WT)),
            2,
            ReplayProgress.NONE);
    String[] csv = ReplayFormat.csv(s).split("\n");
    assertThat(csv).hasSize(1 + 4);
    assertThat(csv[0]).isEqualTo(String.join(",", ReplayFormat.CSV_COLUMNS));
    for (String row : csv) {
      assertThat(row.split(",", -1)).hasSize(ReplayFormat.CSV_COLUMNS.size());
    }
    assertThat(csv[1]).startsWith("sweep,512,51200,0,0,lru,write_through,1500,");
    assertThat(csv[3]).startsWith("unbounded,512,");
    assertThat(csv[4]).startsWith("no-cache,512,0,0,0,");
    String json = ReplayFormat.json(s);
    assertThat(json).startsWith("{\"workload\":\"mooncake:generated\",\"requests\":1500,");
    assertThat(json.split("\"hitRate\":\\{\"device\":", -1)).hasSize(1 + 4);
    assertThat(ReplayFormat.table(s).lines().filter(l -> l.startsWith("sweep"))).hasSize(2);
    assertThat(ReplayFormat.tokens(3_000_000)).isEqualTo("3M");
    assertThat(ReplayFormat.tokens(1_500_000)).isEqualTo("1.5M");
    assertThat(ReplayFormat.tokens(512)).isEqualTo("512");
    assertThat(ReplayFormat.tokens(12_288)).isEqualTo("12288");
  }

  @Test
  void theKeyOnlyStoreForgetsTheLeastRecentlyUsedKey() {
    KeyOnlyStore store = new KeyOnlyStore(2);
    PageKey a = new PageKey(1, 0, 0, 0);
    PageKey b = new PageKey(2, 0, 0, 0);
    PageKey c = new PageKey(3, 0, 0, 0);
    assertThat(store.put(List.of(a, b), null, new int[2])).isEqualTo(2);
    assertThat(store.get(List.of(a), null, new int[1])).isEqualTo(1);
    store.put(List.of(c), null, new int[1]);
    assertThat(store.existsPrefix(List.of(a))).isEqualTo(1);
    assertThat(store.existsPrefix(List.of(b))).isZero();
    assertThat(store.existsPrefix(List.of(a, c, b))).isEqualTo(2);
    assertThat(store.stats().evictions()).isEqualTo(1);
    assertThat(store.size()).isEqualTo(2);
    assertThatThrownBy(() -> new KeyOnlyStore(0)).hasMessageContaining("capacityPages=0");
  }

  @Test
  void aPoolWithoutBytesRefusesToBeReadOrWritten() {
    NoBytesPool pool = new NoBytesPool(16, 4);
    assertThat(pool.spec().pages()).isEqualTo(4);
    assertThatThrownBy(() -> pool.read(0, 0, 0, MemorySegment.NULL))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("holds no KV bytes");
    assertThatThrownBy(() -> pool.write(0, 0, 0, MemorySegment.NULL))
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> ((HostMemory) pool).block(0, 0))
        .isInstanceOf(UnsupportedOperationException.class);
    List<Long> sequences = new ArrayList<>();
    var engine = pool.transferEngine(pool);
    for (int i = 0; i < 3; i++) {
      var h =
          engine.submit(
              io.kvtier.spi.TransferBatch.allLayers(
                  io.kvtier.spi.TransferDirection.DEVICE_TO_HOST, new int[] {0}, new int[] {1}));
      assertThat(h.isDone()).isTrue();
      assertThat(h.failure()).isEmpty();
      sequences.add(h.sequence());
    }
    assertThat(sequences).containsExactly(0L, 1L, 2L);
    assertThat(BlockHashTrace.BLOCK_TOKENS).isEqualTo(512);
  }
}
