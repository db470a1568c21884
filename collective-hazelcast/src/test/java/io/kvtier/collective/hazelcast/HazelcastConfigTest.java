package io.kvtier.collective.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HazelcastConfigTest {

  @Test
  void pinsTheKeyList() {
    assertThat(HazelcastConfig.KEYS).containsExactly(
        "hazelcast.mode",
        "hazelcast.cluster-name",
        "hazelcast.members",
        "hazelcast.bind-address",
        "hazelcast.port",
        "hazelcast.port-count",
        "hazelcast.cp-member-count",
        "hazelcast.join-timeout",
        "hazelcast.heartbeat-interval",
        "hazelcast.member-timeout",
        "hazelcast.cp-member-removal",
        "hazelcast.partition-count",
        "hazelcast.store-backup-count");
    assertThat(HazelcastConfig.DEFAULTS.toProperties().keySet())
        .containsExactlyElementsOf(HazelcastConfig.KEYS);
  }

  @Test
  void pinsTheDefaults() {
    HazelcastConfig d = HazelcastConfig.fromProperties(Map.of());
    assertThat(d).isEqualTo(HazelcastConfig.DEFAULTS);
    assertThat(d.mode()).isEqualTo(HazelcastConfig.Mode.EMBEDDED);
    assertThat(d.clusterName()).isEqualTo("kvtier");
    assertThat(d.members()).containsExactly("127.0.0.1");
    assertThat(d.bindAddress()).isEqualTo("127.0.0.1");
    assertThat(d.bindsAllInterfaces()).isFalse();
    assertThat(d.port()).isEqualTo(5701);
    assertThat(d.portCount()).isEqualTo(10);
    assertThat(d.cpMemberCount()).isEqualTo(3);
    assertThat(d.joinTimeout()).isEqualTo(Duration.ofSeconds(60));
    assertThat(d.heartbeatInterval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(d.memberTimeout()).isEqualTo(Duration.ofSeconds(10));
    assertThat(d.cpMemberRemoval()).isEqualTo(Duration.ofSeconds(60));
    assertThat(d.partitionCount()).isEqualTo(271);
    assertThat(d.storeBackupCount()).isEqualTo(1);
  }

  @Test
  void parsesEveryKey() {
    HazelcastConfig c = HazelcastConfig.fromProperties(Map.ofEntries(
        Map.entry("hazelcast.mode", "CLIENT"),
        Map.entry("hazelcast.cluster-name", "prod-7"),
        Map.entry("hazelcast.members", "10.0.0.1:5701, 10.0.0.2"),
        Map.entry("hazelcast.bind-address", "0.0.0.0"),
        Map.entry("hazelcast.port", "6000"),
        Map.entry("hazelcast.port-count", "3"),
        Map.entry("hazelcast.cp-member-count", "5"),
        Map.entry("hazelcast.join-timeout", "1500ms"),
        Map.entry("hazelcast.heartbeat-interval", "2s"),
        Map.entry("hazelcast.member-timeout", "1m"),
        Map.entry("hazelcast.cp-member-removal", "1h"),
        Map.entry("hazelcast.partition-count", "31"),
        Map.entry("hazelcast.store-backup-count", "0"),
        Map.entry("sim.seed", "ignored: another namespace")));
    assertThat(c.mode()).isEqualTo(HazelcastConfig.Mode.CLIENT);
    assertThat(c.clusterName()).isEqualTo("prod-7");
    assertThat(c.members()).containsExactly("10.0.0.1:5701", "10.0.0.2");
    assertThat(c.bindsAllInterfaces()).isTrue();
    assertThat(c.port()).isEqualTo(6000);
    assertThat(c.portCount()).isEqualTo(3);
    assertThat(c.cpMemberCount()).isEqualTo(5);
    assertThat(c.joinTimeout()).isEqualTo(Duration.ofMillis(1500));
    assertThat(c.heartbeatInterval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(c.memberTimeout()).isEqualTo(Duration.ofMinutes(1));
    assertThat(c.cpMemberRemoval()).isEqualTo(Duration.ofHours(1));
    assertThat(c.partitionCount()).isEqualTo(31);
    assertThat(c.storeBackupCount()).isZero();
    assertThat(HazelcastConfig.fromProperties(c.toProperties())).isEqualTo(c);
  }

  @Test
  void unknownKeyIsRejectedListingTheKnownOnes() {
    assertThatThrownBy(() -> HazelcastConfig.fromProperties(Map.of("hazelcast.prot", "1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hazelcast.prot")
        .hasMessageContaining("hazelcast.port");
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "hazelcast.mode|server|embedded",
      "hazelcast.cluster-name|a@b|letters",
      "hazelcast.members|a,,b|empty entry",
      "hazelcast.port|0|[1, 65535]",
      "hazelcast.port-count|0|port-count",
      "hazelcast.cp-member-count|2|at least 3",
      "hazelcast.join-timeout|10|unit",
      "hazelcast.heartbeat-interval|1500ms|whole number of seconds",
      "hazelcast.member-timeout|1s|longer than",
      "hazelcast.cp-member-removal|5s|at least",
      "hazelcast.partition-count|0|>= 1",
      "hazelcast.store-backup-count|7|[0, 6]"})
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

    var everywhere = HazelcastSetup.member(
        HazelcastConfig.DEFAULTS.with(HazelcastConfig.BIND_ADDRESS, "0.0.0.0"), "check");
    assertThat(everywhere.getNetworkConfig().getInterfaces().isEnabled()).isFalse();
  }
}
