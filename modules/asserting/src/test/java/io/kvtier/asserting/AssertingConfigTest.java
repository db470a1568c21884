package io.kvtier.asserting;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The keys of the {@code asserting} namespace: defaults, forwarding and bad values. */
class AssertingConfigTest {

  private static AssertingConfig parse(Map<String, String> properties) {
    return AssertingConfig.parse(properties, name -> name.equals("cuda") ? "cuda" : "sim");
  }

  @Test
  void defaultsToSimWithoutFaults() {
    AssertingConfig c = parse(Map.of());
    assertThat(c.delegate()).isEqualTo(AssertingConfig.DEFAULT_DELEGATE).isEqualTo("sim");
    assertThat(c.faults()).isEmpty();
    assertThat(c.forwarded()).isEmpty();
  }

  @Test
  void forwardsTheDelegatesKeysWithoutThePrefix() {
    AssertingConfig c =
        parse(Map.of("asserting.delegate", "cuda", "asserting.cuda.device-index", "1"));
    assertThat(c.delegate()).isEqualTo("cuda");
    assertThat(c.forwarded()).isEqualTo(Map.of("cuda.device-index", "1"));
    assertThatThrownBy(() -> parse(Map.of("asserting.sim.seed", "1", "asserting.delegate", "cuda")))
        .as("keys of another delegate's namespace")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key asserting.sim.seed=1");
  }

  @Test
  void parsesEveryFaultKey() {
    AssertingConfig c =
        parse(
            Map.of(
                "asserting.faults",
                "TRUE",
                "asserting.fault.seed",
                "-4",
                "asserting.fault.fail-probability",
                "0.25",
                "asserting.fault.slow-probability",
                "0.5",
                "asserting.fault.stuck-probability",
                "0.125",
                "asserting.fault.slow-delay",
                "250us"));
    assertThat(c.faults())
        .isEqualTo(Optional.of(new FaultPlan(-4, 0.25, 0.5, Duration.ofNanos(250_000), 0.125)));
    assertThat(parse(Map.of("asserting.faults", "true")).faults())
        .hasValue(new FaultPlan(0, 0, 0, AssertingConfig.DEFAULT_SLOW_DELAY, 0));
  }

  @Test
  void badValuesNameTheKeyAndTheValue() {
    assertThatThrownBy(() -> parse(Map.of("asserting.faults", "yes")))
        .hasMessageContaining("asserting.faults='yes' must be true or false");
    assertThatThrownBy(() -> parse(Map.of("asserting.fault.seed", "x1")))
        .hasMessageContaining("asserting.fault.seed='x1' must be an integer");
    assertThatThrownBy(() -> parse(Map.of("asserting.fault.fail-probability", "1.5")))
        .hasMessageContaining("failProbability=1.5 must be between 0 and 1");
    assertThatThrownBy(
            () ->
                parse(
                    Map.of(
                        "asserting.fault.fail-probability",
                        "0.6",
                        "asserting.fault.stuck-probability",
                        "0.6")))
        .hasMessageContaining("exceeds 1");
    assertThatThrownBy(() -> parse(Map.of("asserting.fault.slow-delay", "5 minutes")))
        .hasMessageContaining("asserting.fault.slow-delay='5 minutes'");
    assertThatThrownBy(() -> parse(Map.of("asserting.fault.slow-delay", "5h")))
        .hasMessageContaining("has unit 'h'");
  }

  @Test
  void durationsTakeTheirUnit() {
    assertThat(AssertingConfig.parseDuration("7ns", "k")).isEqualTo(Duration.ofNanos(7));
    assertThat(AssertingConfig.parseDuration("7us", "k")).isEqualTo(Duration.ofNanos(7_000));
    assertThat(AssertingConfig.parseDuration(" 7ms ", "k")).isEqualTo(Duration.ofMillis(7));
    assertThat(AssertingConfig.parseDuration("7s", "k")).isEqualTo(Duration.ofSeconds(7));
  }
}
