package io.kvtier.spi.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ConfigValuesTest {

  private enum Policy {
    WRITE_THROUGH,
    WRITE_BACK
  }

  @Test
  void parsesSizesWithBinaryAndDecimalUnits() {
    assertThat(ConfigValues.parseBytes("k", "4096")).isEqualTo(4096);
    assertThat(ConfigValues.parseBytes("k", "12B")).isEqualTo(12);
    assertThat(ConfigValues.parseBytes("k", "512KiB")).isEqualTo(512L << 10);
    assertThat(ConfigValues.parseBytes("k", "64MiB")).isEqualTo(64L << 20);
    assertThat(ConfigValues.parseBytes("k", " 1 GiB ")).isEqualTo(1L << 30);
    assertThat(ConfigValues.parseBytes("k", "2TiB")).isEqualTo(2L << 40);
    assertThat(ConfigValues.parseBytes("k", "100MB")).isEqualTo(100_000_000L);
    assertThat(ConfigValues.parseBytes("k", "3kb")).isEqualTo(3_000L);
    assertThat(ConfigValues.parseBytes("k", "1GB")).isEqualTo(1_000_000_000L);
    assertThat(ConfigValues.parseBytes("k", "1TB")).isEqualTo(1_000_000_000_000L);
  }

  @Test
  void rejectsWhatIsNotASize() {
    for (String bad : new String[] {"", "MiB", "1.5GiB", "-3", "12XB", "1 G", "0x10", "1GB/s"}) {
      assertThatThrownBy(() -> ConfigValues.parseBytes("kvtier.host-bytes", bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("kvtier.host-bytes='" + bad + "' is not a size")
          .hasMessageContaining("for example 64MiB");
    }
    assertThatThrownBy(() -> ConfigValues.parseBytes("kvtier.host-bytes", "9000000TiB"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.host-bytes='9000000TiB' is too large");
  }

  @ParameterizedTest
  @CsvSource({
    "1000, 1000",
    "1B/s, 1",
    "3KB/s, 3000",
    "2MiB/s, 2097152",
    "0.5GB/s, 500000000",
    "12.5GB/s, 12500000000",
    "1TB/s, 1000000000000",
    "1tib/s, 1099511627776",
    "' 7 gb/s ', 7000000000",
    "0.0015KB/s, 2"
  })
  void parsesRatesRoundingToWholeBytes(String value, long bytesPerSecond) {
    assertThat(ConfigValues.parseRate("k", value)).isEqualTo(bytesPerSecond);
  }

  @Test
  void rejectsWhatIsNotARate() {
    for (String bad : new String[] {"fast", "-1GB/s", "10Gb/h", "5/s", "1GB", "1e9"}) {
      assertThatThrownBy(() -> ConfigValues.parseRate("sim.h2d-bandwidth", bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("sim.h2d-bandwidth='" + bad + "' is not a transfer rate")
          .hasMessageContaining("for example 25GB/s");
    }
    assertThatThrownBy(() -> ConfigValues.parseRate("r", "0"))
        .hasMessage("r='0' must be at least 1 byte per second");
    assertThatThrownBy(() -> ConfigValues.parseRate("r", "0.4"))
        .hasMessageContaining("must be at least 1 byte per second");
    assertThatThrownBy(() -> ConfigValues.parseRate("r", "99999999999TB/s"))
        .hasMessageContaining("r='99999999999TB/s' is too large");
  }

  @ParameterizedTest
  @CsvSource({
    "30s, 30000000000",
    "500ms, 500000000",
    "2m, 120000000000",
    "1h, 3600000000000",
    "1d, 86400000000000",
    "7us, 7000",
    "5µs, 5000",
    "9ns, 9",
    "1.5ms, 1500000",
    "' 7 US ', 7000",
    "10 s, 10000000000",
    "+10s, 10000000000",
    "0.0000000015s, 2",
    "0, 0",
    "0ms, 0",
    "PT1M30S, 90000000000"
  })
  void parsesDurations(String value, long nanos) {
    assertThat(ConfigValues.parseDuration("k", value)).isEqualTo(Duration.ofNanos(nanos));
  }

  @Test
  void parsesDurationsBeyondALongOfNanoseconds() {
    assertThat(ConfigValues.parseDuration("k", "200000d")).isEqualTo(Duration.ofDays(200_000));
    assertThat(ConfigValues.formatDuration(Duration.ofDays(200_000))).isEqualTo("PT4800000H");
    assertThatThrownBy(() -> ConfigValues.parseDuration("t", "99999999999999999999s"))
        .hasMessage("t='99999999999999999999s' is too long a duration");
  }

  @Test
  void rejectsWhatIsNotADuration() {
    assertThatThrownBy(() -> ConfigValues.parseDuration("t", "30"))
        .hasMessageContaining("t='30' has no unit")
        .hasMessageContaining("for example 30s");
    assertThatThrownBy(() -> ConfigValues.parseDuration("t", "-2ms"))
        .hasMessageContaining("t='-2ms' is not a duration");
    assertThatThrownBy(() -> ConfigValues.parseDuration("t", "forever"))
        .hasMessageContaining("t='forever' is not a duration");
    assertThatThrownBy(() -> ConfigValues.parseDuration("t", "PT-1S"))
        .hasMessageContaining("t='PT-1S' is not a duration");
    assertThatThrownBy(() -> ConfigValues.parseDuration("t", "Pfive"))
        .hasMessageContaining("t='Pfive' is not a duration");
    assertThatThrownBy(() -> ConfigValues.parseDuration("t", "3 weeks"))
        .hasMessageContaining("t='3 weeks' has an unknown unit 'weeks'");
  }

  @Test
  void formatsWithTheLargestExactUnit() {
    assertThat(ConfigValues.formatBytes(0)).isEqualTo("0");
    assertThat(ConfigValues.formatBytes(1000)).isEqualTo("1000");
    assertThat(ConfigValues.formatBytes(32_768)).isEqualTo("32KiB");
    assertThat(ConfigValues.formatBytes(3L << 30)).isEqualTo("3GiB");
    assertThat(ConfigValues.formatDuration(Duration.ofSeconds(30))).isEqualTo("30s");
    assertThat(ConfigValues.formatDuration(Duration.ofMillis(1500))).isEqualTo("1500ms");
    assertThat(ConfigValues.formatDuration(Duration.ofMinutes(120))).isEqualTo("2h");
    assertThat(ConfigValues.formatDuration(Duration.ofNanos(5_000))).isEqualTo("5us");
    assertThat(ConfigValues.formatDuration(Duration.ZERO)).isEqualTo("0ns");
  }

  @Test
  void formattingThenParsingGivesTheSameValue() {
    long seed = Long.getLong("kvtier.tests.seed", 20_261_201L);
    SplittableRandom random = new SplittableRandom(seed);
    for (int i = 0; i < 2_000; i++) {
      long bytes = random.nextLong(0, 1L << (random.nextInt(1, 62)));
      if (random.nextBoolean()) {
        bytes = bytes & -(1L << random.nextInt(0, 41));
      }
      assertThat(ConfigValues.parseBytes("k", ConfigValues.formatBytes(bytes)))
          .as("bytes %d (-Dkvtier.tests.seed=%d)", bytes, seed)
          .isEqualTo(bytes);
      Duration d = Duration.ofNanos(random.nextLong(0, Long.MAX_VALUE));
      if (random.nextBoolean()) {
        d = Duration.ofSeconds(d.toSeconds());
      }
      assertThat(ConfigValues.parseDuration("k", ConfigValues.formatDuration(d)))
          .as("duration %s (-Dkvtier.tests.seed=%d)", d, seed)
          .isEqualTo(d);
    }
    Duration longest = Duration.ofSeconds(Long.MAX_VALUE / 2, TimeUnit.MILLISECONDS.toNanos(5));
    assertThat(ConfigValues.parseDuration("k", ConfigValues.formatDuration(longest)))
        .isEqualTo(longest);
  }

  @Test
  void parsesNumbersAndNamesTheRangeWhenOutside() {
    assertThat(ConfigValues.parseInt("k", " 64 ")).isEqualTo(64);
    assertThat(ConfigValues.parseInt("k", "+3", 1, 8)).isEqualTo(3);
    assertThat(ConfigValues.parseLong("k", "-42")).isEqualTo(-42);
    assertThat(ConfigValues.parseDouble("k", " 0.25 ")).isEqualTo(0.25);
    assertThat(ConfigValues.parseDouble("k", "NaN")).isNaN();
    assertThatThrownBy(() -> ConfigValues.parseInt("k", "x", 1, Integer.MAX_VALUE))
        .hasMessage("k='x' is not a whole number (from 1 to 2147483647)");
    assertThatThrownBy(() -> ConfigValues.parseInt("k", "0", 1, Integer.MAX_VALUE))
        .hasMessage("k=0 must be >= 1");
    assertThatThrownBy(() -> ConfigValues.parseInt("k", "9", Integer.MIN_VALUE, 8))
        .hasMessage("k=9 must be <= 8");
    assertThatThrownBy(() -> ConfigValues.parseInt("k", "1025", 1, 1024))
        .hasMessage("k=1025 must be in [1, 1024]");
    assertThatThrownBy(() -> ConfigValues.parseLong("k", "1.5"))
        .hasMessageContaining("k='1.5' is not a whole number");
    assertThatThrownBy(() -> ConfigValues.parseDouble("k", "two"))
        .hasMessage("k='two' is not a number, such as 2 or 2.5");
  }

  @Test
  void parsesBooleansInAnyCase() {
    assertThat(ConfigValues.parseBoolean("k", " TRUE ")).isTrue();
    assertThat(ConfigValues.parseBoolean("k", "False")).isFalse();
    assertThatThrownBy(() -> ConfigValues.parseBoolean("k", "yes"))
        .hasMessage("k='yes' is not true or false");
  }

  @Test
  void parsesEnumNamesInAnyCaseWithDashes() {
    assertThat(ConfigValues.parseEnum(Policy.class, "policy", "write-back"))
        .isEqualTo(Policy.WRITE_BACK);
    assertThat(ConfigValues.parseEnum(Policy.class, "policy", " Write_Through "))
        .isEqualTo(Policy.WRITE_THROUGH);
    assertThatThrownBy(() -> ConfigValues.parseEnum(Policy.class, "write policy", "often"))
        .hasMessage("unknown write policy 'often': use one of write_through, write_back");
  }

  @Test
  void suggestsTheClosestKeyOnlyForATypo() {
    List<String> keys = List.of("kvtier.page-size", "kvtier.collective", "kvtier.layers");
    assertThat(ConfigValues.closest("kvtier.page-sise", keys)).contains("kvtier.page-size");
    assertThat(ConfigValues.closest("kvtier.colective", keys)).contains("kvtier.collective");
    assertThat(ConfigValues.closest("kvtier.zzzzzzzzzzzzzzzz", keys)).isEmpty();
    assertThat(ConfigValues.closest("kvtier.x", List.of())).isEmpty();
    assertThat(ConfigValues.distance("kitten", "sitting")).isEqualTo(3);
  }

  @Test
  void anUnknownKeyMessageNamesTheKeyTheOriginAndTheKnownKeys() {
    List<String> keys = List.of("sim.seed", "sim.jitter");
    assertThat(ConfigValues.unknownKeyMessage("sim.sead", "file a.properties", keys))
        .isEqualTo(
            "unknown key 'sim.sead' (in file a.properties): did you mean sim.seed? The"
                + " sim.* keys are: sim.seed, sim.jitter");
    assertThat(ConfigValues.unknownKeyMessage("sim.colour", "", keys))
        .isEqualTo("unknown key 'sim.colour': the sim.* keys are: sim.seed, sim.jitter");
    assertThat(ConfigValues.unknownKeyMessage("memory.size", "", List.of()))
        .isEqualTo(
            "unknown key 'memory.size': the memory.* namespace has no keys; remove"
                + " memory.size");
  }
}
