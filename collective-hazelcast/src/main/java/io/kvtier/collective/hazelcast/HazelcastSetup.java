package io.kvtier.collective.hazelcast;

import com.hazelcast.client.config.ClientConfig;
import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.NetworkConfig;
import com.hazelcast.spi.properties.ClusterProperty;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * Turns a {@link HazelcastConfig} into Hazelcast's member and client configurations. Members
 * listen on the bind address only, join by TCP-IP with the listed members (never multicast or
 * cloud auto-detection), do not phone home, and detect silent members within the member
 * timeout, so that a dead rank shows up as a membership event within seconds.
 */
final class HazelcastSetup {

  /** Seconds a joining member waits for others; Hazelcast's 5 s slows every group start. */
  private static final int WAIT_SECONDS_BEFORE_JOIN = 1;

  /** Bound on a graceful shutdown (partition migration); Hazelcast waits 10 minutes. */
  private static final int GRACEFUL_SHUTDOWN_SECONDS = 15;

  private HazelcastSetup() {}

  /**
   * The configuration of an embedded member.
   *
   * @param c the kvtier configuration
   * @param instanceName the member's instance name, unique in the JVM
   * @return the member configuration
   * @throws IllegalArgumentException if the bind address does not resolve
   */
  static Config member(HazelcastConfig c, String instanceName) {
    Config config = new Config();
    config.setInstanceName(instanceName);
    config.setClusterName(c.clusterName());
    config.setProperty(ClusterProperty.PHONE_HOME_ENABLED.getName(), "false");
    config.setProperty(
        ClusterProperty.WAIT_SECONDS_BEFORE_JOIN.getName(),
        Integer.toString(WAIT_SECONDS_BEFORE_JOIN));
    config.setProperty(
        ClusterProperty.HEARTBEAT_INTERVAL_SECONDS.getName(),
        Integer.toString((int) c.heartbeatInterval().toSeconds()));
    config.setProperty(
        ClusterProperty.MAX_NO_HEARTBEAT_SECONDS.getName(),
        Integer.toString((int) c.memberTimeout().toSeconds()));
    config.setProperty(
        ClusterProperty.PARTITION_COUNT.getName(), Integer.toString(c.partitionCount()));
    config.setProperty(
        ClusterProperty.GRACEFUL_SHUTDOWN_MAX_WAIT.getName(),
        Integer.toString(GRACEFUL_SHUTDOWN_SECONDS));
    config.getJetConfig().setEnabled(false);

    NetworkConfig network = config.getNetworkConfig();
    network.setPort(c.port()).setPortAutoIncrement(c.portCount() > 1).setPortCount(c.portCount());
    if (!c.bindsAllInterfaces()) {
      // Hazelcast binds its server socket to every interface unless told not to, even when an
      // interface is configured: both settings are needed to listen on loopback only.
      network.getInterfaces().setEnabled(true).addInterface(resolve(c.bindAddress()));
      config.setProperty(ClusterProperty.SOCKET_BIND_ANY.getName(), "false");
      config.setProperty(ClusterProperty.SOCKET_SERVER_BIND_ANY.getName(), "false");
      config.setProperty(ClusterProperty.SOCKET_CLIENT_BIND_ANY.getName(), "false");
    }
    JoinConfig join = network.getJoin();
    join.getMulticastConfig().setEnabled(false);
    join.getAutoDetectionConfig().setEnabled(false);
    join.getTcpIpConfig()
        .setEnabled(true)
        .setMembers(c.members())
        .setConnectionTimeoutSeconds(Math.max(1, (int) c.heartbeatInterval().toSeconds()));

    if (c.cpMemberCount() > 0) {
      int ttl = (int) c.memberTimeout().toSeconds();
      config
          .getCPSubsystemConfig()
          .setCPMemberCount(c.cpMemberCount())
          .setSessionHeartbeatIntervalSeconds((int) c.heartbeatInterval().toSeconds())
          .setSessionTimeToLiveSeconds(ttl)
          .setMissingCPMemberAutoRemovalSeconds((int) c.cpMemberRemoval().toSeconds());
    }
    return config;
  }

  /**
   * The configuration of a client of a running cluster.
   *
   * @param c the kvtier configuration
   * @param instanceName the client's instance name, unique in the JVM
   * @return the client configuration
   */
  static ClientConfig client(HazelcastConfig c, String instanceName) {
    ClientConfig config = new ClientConfig();
    config.setInstanceName(instanceName);
    config.setClusterName(c.clusterName());
    config.setProperty(ClusterProperty.PHONE_HOME_ENABLED.getName(), "false");
    config.setProperty(
        "hazelcast.client.heartbeat.interval", Long.toString(c.heartbeatInterval().toMillis()));
    config.setProperty(
        "hazelcast.client.heartbeat.timeout", Long.toString(c.memberTimeout().toMillis()));
    config.getNetworkConfig().setAddresses(c.members());
    config.getNetworkConfig().getAutoDetectionConfig().setEnabled(false);
    config
        .getConnectionStrategyConfig()
        .getConnectionRetryConfig()
        .setClusterConnectTimeoutMillis(c.joinTimeout().toMillis());
    return config;
  }

  private static String resolve(String host) {
    try {
      return InetAddress.getByName(host).getHostAddress();
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException(
          HazelcastConfig.BIND_ADDRESS
              + "="
              + host
              + " does not resolve to an address on this"
              + " machine: write an interface address such as 127.0.0.1",
          e);
    }
  }
}
