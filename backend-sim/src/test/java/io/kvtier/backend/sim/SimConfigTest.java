package io.kvtier.backend.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.TransferDirection;
import io.kvtier.testkit.config.ConfigAssertions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SimConfigTest {

  @Test
  void defaults() {
    ConfigAssertions.assertDefaults(
        SimConfig.PARSER,
        new SimConfig(
            25_000_000_000L,
            25_000_000_000L,
            Duration.ofNanos(5_000),
            Duration.ofNanos(5_000),
            List.of(),
            OptionalInt.empty(),
            4.0,
            0,
            0,
            0,
            Duration.ofMillis(10),
            0,
            0));
    assertThat(SimConfig.DEFAULTS.toProperties().keySet())
        .containsExactlyElementsOf(SimConfig.KEYS);
  }

  @Test
  void fullMapping() {
    Map<String, String> properties =
        Map.ofEntries(
            Map.entry("sim.h2d-bandwidth", "12.5GB/s"),
            Map.entry("sim.d2h-bandwidth", "1GiB/s"),
            Map.entry("sim.h2d-latency", "2ms"),
            Map.entry("sim.d2h-latency", " 7us "),
            Map.entry("sim.rank-skew", "1, 1,3,1"),
            Map.entry("sim.slow-rank", "2"),
            Map.entry("sim.slow-factor", "5"),
            Map.entry("sim.jitter", "0.25"),
            Map.entry("sim.seed", "-42"),
            Map.entry("sim.stall-probability", "0.01"),
            Map.entry("sim.stall-duration", "1s"),
            Map.entry("sim.failure-probability", "1"),
            Map.entry("sim.flip-probability", "0.5"));
    SimConfig expected =
        new SimConfig(
            12_500_000_000L,
            1L << 30,
            Duration.ofMillis(2),
            Duration.ofNanos(7_000),
            List.of(1.0, 1.0, 3.0, 1.0),
            OptionalInt.of(2),
            5.0,
            0.25,
            -42L,
            0.01,
            Duration.ofSeconds(1),
            1.0,
            0.5);
    ConfigAssertions.assertFullMapping(SimConfig.PARSER, properties, expected);
    assertThat(SimConfig.fromProperties(expected.toProperties())).isEqualTo(expected);
  }

  @ParameterizedTest
  @CsvSource({
    "1000, 1000",
    "1B/s, 1",
    "3KB/s, 3000",
    "2MiB/s, 2097152",
    "0.5GB/s, 500000000",
    "1TB/s, 1000000000000",
    "1tib/s, 1099511627776"
  })
  void parsesRates(String value, long bytesPerSecond) {
    assertThat(SimConfig.DEFAULTS.with(SimConfig.H2D_BANDWIDTH, value).h2dBandwidth())
        .isEqualTo(bytesPerSecond);
  }

  @ParameterizedTest
  @CsvSource({
    "0, 0",
    "0ms, 0",
    "100ns, 100",
    "5us, 5000",
    "5µs, 5000",
    "1.5ms, 1500000",
    "2s, 2000000000"
  })
  void parsesDurations(String value, long nanos) {
    assertThat(SimConfig.DEFAULTS.with(SimConfig.D2H_LATENCY, value).d2hLatency())
        .isEqualTo(Duration.ofNanos(nanos));
  }

  @Test
  void rejectsAnUnknownKeyListingTheKnownOnes() {
    assertThatThrownBy(() -> SimConfig.fromProperties(Map.of("sim.h2d-bandwith", "1GB/s")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sim.h2d-bandwith")
        .hasMessageContaining(String.join(", ", SimConfig.KEYS));
  }

  @Test
  void ignoresKeysOfOtherNamespaces() {
    assertThat(SimConfig.fromProperties(Map.of("kvtier.device", "sim", "simulator.x", "1")))
        .isEqualTo(SimConfig.DEFAULTS);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "sim.h2d-bandwidth|fast",
        "sim.h2d-bandwidth|0",
        "sim.d2h-bandwidth|-1GB/s",
        "sim.d2h-bandwidth|10Gb/h",
        "sim.h2d-latency|5",
        "sim.h2d-latency|5 parsecs",
        "sim.d2h-latency|-2ms",
        "sim.rank-skew|1,0,1",
        "sim.rank-skew|1,,1",
        "sim.rank-skew|1,x",
        "sim.slow-rank|-1",
        "sim.slow-rank|two",
        "sim.slow-factor|0",
        "sim.slow-factor|Infinity",
        "sim.jitter|-0.1",
        "sim.jitter|NaN",
        "sim.seed|1.5",
        "sim.stall-probability|1.5",
        "sim.stall-duration|forever",
        "sim.failure-probability|-0.01",
        "sim.h2d-bandwidth|99999999999TB/s"
      })
  void rejectsABadValueNamingKeyAndValue(String key, String value) {
    assertThatThrownBy(() -> SimConfig.fromProperties(Map.of(key, value)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(key)
        .satisfies(e -> assertThat(e.getMessage()).containsAnyOf(value, value.strip()));
  }

  @Test
  void rejectsADurationTheSimulatedClockCannotCount() {
    assertThatThrownBy(() -> SimConfig.fromProperties(Map.of("sim.stall-duration", "300000d")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sim.stall-duration=")
        .hasMessageContaining("about 292 years");
  }

  @Test
  void skewCombinesTheListAndTheSlowRank() {
    SimConfig c =
        SimConfig.DEFAULTS
            .with(SimConfig.RANK_SKEW, "1,2,3")
            .with(SimConfig.SLOW_RANK, "2")
            .with(SimConfig.SLOW_FACTOR, "4");
    assertThat(c.skew(0)).isEqualTo(1.0);
    assertThat(c.skew(1)).isEqualTo(2.0);
    assertThat(c.skew(2)).isEqualTo(12.0);
    assertThat(c.skew(3)).isEqualTo(1.0);
    assertThat(SimConfig.DEFAULTS.with(SimConfig.SLOW_RANK, "5").skew(5)).isEqualTo(4.0);
    assertThatThrownBy(() -> c.skew(-1)).hasMessageContaining("rank=-1");
  }

  @Test
  void selectsTheDirection() {
    SimConfig c =
        SimConfig.DEFAULTS
            .with(SimConfig.H2D_BANDWIDTH, "1000")
            .with(SimConfig.D2H_BANDWIDTH, "2000")
            .with(SimConfig.H2D_LATENCY, "1us")
            .with(SimConfig.D2H_LATENCY, "2us");
    assertThat(c.bandwidth(TransferDirection.HOST_TO_DEVICE)).isEqualTo(1000);
    assertThat(c.bandwidth(TransferDirection.DEVICE_TO_HOST)).isEqualTo(2000);
    assertThat(c.latency(TransferDirection.HOST_TO_DEVICE)).isEqualTo(Duration.ofNanos(1000));
    assertThat(c.latency(TransferDirection.DEVICE_TO_HOST)).isEqualTo(Duration.ofNanos(2000));
  }

  @Test
  void theCompactConstructorValidates() {
    assertThatThrownBy(
            () ->
                new SimConfig(
                    1,
                    1,
                    Duration.ZERO,
                    Duration.ZERO,
                    List.of(-1.0),
                    OptionalInt.empty(),
                    1,
                    0,
                    0,
                    0,
                    Duration.ZERO,
                    0,
                    0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sim.rank-skew");
    assertThatThrownBy(
            () ->
                new SimConfig(
                    1,
                    1,
                    Duration.ZERO,
                    Duration.ofNanos(-1),
                    List.of(),
                    OptionalInt.empty(),
                    1,
                    0,
                    0,
                    0,
                    Duration.ZERO,
                    0,
                    0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sim.d2h-latency");
  }
}
