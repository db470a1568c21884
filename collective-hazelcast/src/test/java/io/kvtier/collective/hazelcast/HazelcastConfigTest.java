package io.kvtier.collective.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.config.ConfigAssertions;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HazelcastConfigTest {

  @Test
  void defaults() {
    ConfigAssertions.assertDefaults(
        HazelcastConfig.PARSER,
        new HazelcastConfig(
            HazelcastConfig.Mode.EMBEDDED,
            "kvtier",
            List.of("127.0.0.1"),
            "127.0.0.1",
            5701,
            10,
            3,
            Duration.ofSeconds(60),
            Duration.ofSeconds(1),
            Duration.ofSeconds(10),
            Duration.ofSeconds(60),
            271,
            1));
  }

  @Test
  void fullMapping() {
    Map<String, String> properties = new LinkedHashMap<>();
    properties.put("hazelcast.mode", "CLIENT");
    properties.put("hazelcast.cluster-name", "prod-7");
    properties.put("hazelcast.members", "10.0.0.1:5701, 10.0.0.2");
    properties.put("hazelcast.bind-address", "0.0.0.0");
    properties.put("hazelcast.port", "6000");
    properties.put("hazelcast.port-count", "3");
    properties.put("hazelcast.cp-member-count", "5");
    properties.put("hazelcast.join-timeout", "1500ms");
    properties.put("hazelcast.heartbeat-interval", "2s");
    properties.put("hazelcast.member-timeout", "1m");
    properties.put("hazelcast.cp-member-removal", "1h");
    properties.put("hazelcast.partition-count", "31");
    properties.put("hazelcast.store-backup-count", "0");
    ConfigAssertions.assertFullMapping(
        HazelcastConfig.PARSER,
        properties,
        new HazelcastConfig(
            HazelcastConfig.Mode.CLIENT,
            "prod-7",
            List.of("10.0.0.1:5701", "10.0.0.2"),
            "0.0.0.0",
            6000,
            3,
            5,
            Duration.ofMillis(1500),
            Duration.ofSeconds(2),
            Duration.ofMinutes(1),
            Duration.ofHours(1),
            31,
            0));
    assertThat(HazelcastConfig.KEYS).containsExactlyElementsOf(properties.keySet());
  }

  @Test
  void propertiesReadBackToTheSameConfigAndOtherNamespacesAreIgnored() {
    HazelcastConfig c =
        HazelcastConfig.DEFAULTS
            .with(HazelcastConfig.JOIN_TIMEOUT, "1500ms")
            .with(HazelcastConfig.MODE, "client");
    assertThat(c.toProperties().keySet()).containsExactlyElementsOf(HazelcastConfig.KEYS);
    assertThat(HazelcastConfig.fromProperties(c.toProperties())).isEqualTo(c);
    assertThat(HazelcastConfig.fromProperties(Map.of("sim.seed", "x", "hazelcastx.a", "1")))
        .isEqualTo(HazelcastConfig.DEFAULTS);
    assertThat(HazelcastConfig.DEFAULTS.bindsAllInterfaces()).isFalse();
    assertThat(c.with(HazelcastConfig.BIND_ADDRESS, "0.0.0.0").bindsAllInterfaces()).isTrue();
  }

  @Test
  void unknownKeyIsRejectedNamingTheClosestKnownOne() {
    assertThatThrownBy(() -> HazelcastConfig.fromProperties(Map.of("hazelcast.prot", "1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key 'hazelcast.prot'")
        .hasMessageContaining("did you mean hazelcast.port?")
        .hasMessageContaining(String.join(", ", HazelcastConfig.KEYS));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "hazelcast.mode|server|use one of embedded, client (embedded: this process starts",
        "hazelcast.cluster-name|a@b|letters",
        "hazelcast.members|a,,b|empty entry",
        "hazelcast.port|0|[1, 65535]",
        "hazelcast.port-count|0|port-count",
        "hazelcast.cp-member-count|2|at least 3",
        "hazelcast.join-timeout|10|has no unit",
        "hazelcast.join-timeout|0s|must be positive",
        "hazelcast.port|many|is not a whole number",
        "hazelcast.heartbeat-interval|1500ms|whole number of seconds",
        "hazelcast.member-timeout|1s|longer than",
        "hazelcast.cp-member-removal|5s|at least",
        "hazelcast.partition-count|0|>= 1",
        "hazelcast.store-backup-count|7|[0, 6]"
      })
  void badValuesNameTheKeyAndTheFix(String key, String value, String fix) {
    assertThatThrownBy(() -> HazelcastConfig.DEFAULTS.with(key, value))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(key)
        .hasMessageContaining(fix);
  }

  @Test
  void loopbackOnlyUnlessAllInterfacesAreAsked() {
    var member = HazelcastSetup.member(HazelcastConfig.DEFAULTS, "check");
    assertThat(member.getNetworkConfig().getInterfaces().isEnabled()).isTrue();
    assertThat(member.getNetworkConfig().getInterfaces().getInterfaces())
        .containsExactly("127.0.0.1");
    assertThat(member.getProperty("hazelcast.socket.bind.any")).isEqualTo("false");
    assertThat(member.getNetworkConfig().getJoin().getMulticastConfig().isEnabled()).isFalse();
    assertThat(member.getNetworkConfig().getJoin().getTcpIpConfig().getMembers())
        .isEqualTo(List.of("127.0.0.1"));
    assertThat(member.getProperty("hazelcast.phone.home.enabled")).isEqualTo("false");
    assertThat(member.getCPSubsystemConfig().getCPMemberCount()).isEqualTo(3);

    var everywhere =
        HazelcastSetup.member(
            HazelcastConfig.DEFAULTS.with(HazelcastConfig.BIND_ADDRESS, "0.0.0.0"), "check");
    assertThat(everywhere.getNetworkConfig().getInterfaces().isEnabled()).isFalse();
  }
}
