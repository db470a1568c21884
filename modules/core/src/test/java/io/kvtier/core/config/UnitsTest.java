package io.kvtier.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.TestSeeds;
import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class UnitsTest {

  @Test
  void parsesSizesWithBinaryAndDecimalUnits() {
    assertThat(Units.parseBytes("k", "4096")).isEqualTo(4096);
    assertThat(Units.parseBytes("k", "12B")).isEqualTo(12);
    assertThat(Units.parseBytes("k", "512KiB")).isEqualTo(512L << 10);
    assertThat(Units.parseBytes("k", "64MiB")).isEqualTo(64L << 20);
    assertThat(Units.parseBytes("k", " 1 GiB ")).isEqualTo(1L << 30);
    assertThat(Units.parseBytes("k", "2TiB")).isEqualTo(2L << 40);
    assertThat(Units.parseBytes("k", "100MB")).isEqualTo(100_000_000L);
    assertThat(Units.parseBytes("k", "3kb")).isEqualTo(3_000L);
    assertThat(Units.parseBytes("k", "1GB")).isEqualTo(1_000_000_000L);
    assertThat(Units.parseBytes("k", "1TB")).isEqualTo(1_000_000_000_000L);
  }

  @Test
  void rejectsWhatIsNotASize() {
    for (String bad : new String[] {"", "MiB", "1.5GiB", "-3", "12XB", "1 G", "0x10"}) {
      assertThatThrownBy(() -> Units.parseBytes("kvtier.host-bytes", bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("kvtier.host-bytes='" + bad + "' is not a size")
          .hasMessageContaining("for example 64MiB");
    }
    assertThatThrownBy(() -> Units.parseBytes("kvtier.host-bytes", "9000000TiB"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is too large");
  }

  @Test
  void parsesDurations() {
    assertThat(Units.parseDuration("k", "30s")).isEqualTo(Duration.ofSeconds(30));
    assertThat(Units.parseDuration("k", "500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(Units.parseDuration("k", "2m")).isEqualTo(Duration.ofMinutes(2));
    assertThat(Units.parseDuration("k", "1h")).isEqualTo(Duration.ofHours(1));
    assertThat(Units.parseDuration("k", "1d")).isEqualTo(Duration.ofDays(1));
    assertThat(Units.parseDuration("k", "7us")).isEqualTo(Duration.ofNanos(7_000));
    assertThat(Units.parseDuration("k", "9ns")).isEqualTo(Duration.ofNanos(9));
    assertThat(Units.parseDuration("k", "PT1M30S")).isEqualTo(Duration.ofSeconds(90));
  }

  @Test
  void rejectsWhatIsNotADuration() {
    assertThatThrownBy(() -> Units.parseDuration("t", "30"))
        .hasMessageContaining("t='30' has no unit");
    assertThatThrownBy(() -> Units.parseDuration("t", "1.5s"))
        .hasMessageContaining("t='1.5s' is not a duration");
    assertThatThrownBy(() -> Units.parseDuration("t", "PT-1S"))
        .hasMessageContaining("t='PT-1S' is not a duration");
    assertThatThrownBy(() -> Units.parseDuration("t", "3 weeks"))
        .hasMessageContaining("unknown unit 'weeks'");
  }

  @Test
  void formatsWithTheLargestExactUnit() {
    assertThat(Units.formatBytes(0)).isEqualTo("0");
    assertThat(Units.formatBytes(1000)).isEqualTo("1000");
    assertThat(Units.formatBytes(32_768)).isEqualTo("32KiB");
    assertThat(Units.formatBytes(3L << 30)).isEqualTo("3GiB");
    assertThat(Units.formatDuration(Duration.ofSeconds(30))).isEqualTo("30s");
    assertThat(Units.formatDuration(Duration.ofMillis(1500))).isEqualTo("1500ms");
    assertThat(Units.formatDuration(Duration.ofMinutes(120))).isEqualTo("2h");
    assertThat(Units.formatDuration(Duration.ZERO)).isEqualTo("0ns");
  }

  @Test
  void formattingThenParsingGivesTheSameValue() {
    TestSeeds.run(
        seed -> {
          SplittableRandom random = new SplittableRandom(seed);
          for (int i = 0; i < TestSeeds.scaled(2_000); i++) {
            long bytes = random.nextLong(0, 1L << (random.nextInt(1, 62)));
            if (random.nextBoolean()) {
              bytes = bytes & -(1L << random.nextInt(0, 41));
            }
            long expected = bytes;
            assertThat(Units.parseBytes("k", Units.formatBytes(bytes)))
                .as("bytes %d", expected)
                .isEqualTo(expected);
            Duration d = Duration.ofNanos(random.nextLong(0, Long.MAX_VALUE));
            if (random.nextBoolean()) {
              d = Duration.ofSeconds(d.toSeconds());
            }
            assertThat(Units.parseDuration("k", Units.formatDuration(d))).isEqualTo(d);
          }
        });
  }
}
