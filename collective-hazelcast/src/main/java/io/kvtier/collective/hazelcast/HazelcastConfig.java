package io.kvtier.collective.hazelcast;

import io.kvtier.spi.config.ConfigParser;
import io.kvtier.spi.config.ConfigReader;
import io.kvtier.spi.config.ConfigValues;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The typed configuration of the Hazelcast module, namespace {@code hazelcast.}, shared by the
 * {@code hazelcast} collective and the {@code hazelcast} L3 store of one process (they share one
 * Hazelcast instance when their configs are equal).
 *
 * @param mode {@code embedded}: this process starts a cluster member; {@code client}: it
 *     connects to a running cluster ({@value #MODE})
 * @param clusterName the cluster to form or join; members of other clusters are refused
 *     ({@value #CLUSTER_NAME})
 * @param members who to join (embedded: TCP-IP join members; client: cluster addresses), each
 *     {@code host} or {@code host:port}; a member without port means every port of {@code port}
 *     to {@code port + port-count - 1} ({@value #MEMBERS}, comma separated)
 * @param bindAddress the interface an embedded member listens on; {@code 0.0.0.0} listens on
 *     every interface and must be asked for explicitly ({@value #BIND_ADDRESS})
 * @param port the first port an embedded member tries ({@value #PORT})
 * @param portCount how many ports from {@code port} up an embedded member tries ({@value
 *     #PORT_COUNT})
 * @param cpMemberCount CP members of the cluster, 0 (no CP subsystem: the store works, the
 *     collective refuses) or at least 3 ({@value #CP_MEMBER_COUNT})
 * @param joinTimeout the bound on starting a member (cluster join and CP discovery) or
 *     connecting a client ({@value #JOIN_TIMEOUT})
 * @param heartbeatInterval member and CP session heartbeat, whole seconds ({@value
 *     #HEARTBEAT_INTERVAL})
 * @param memberTimeout a member silent this long is removed from the cluster (also the CP
 *     session TTL), whole seconds, more than the heartbeat ({@value #MEMBER_TIMEOUT})
 * @param cpMemberRemoval a CP member missing this long is removed from the CP groups, whole
 *     seconds, at least {@code member-timeout} ({@value #CP_MEMBER_REMOVAL})
 * @param partitionCount Hazelcast partitions, equal on every member ({@value #PARTITION_COUNT})
 * @param storeBackupCount synchronous backups of each L3 page, 0 to 6 ({@value
 *     #STORE_BACKUP_COUNT})
 */
public record HazelcastConfig(
    Mode mode,
    String clusterName,
    List<String> members,
    String bindAddress,
    int port,
    int portCount,
    int cpMemberCount,
    Duration joinTimeout,
    Duration heartbeatInterval,
    Duration memberTimeout,
    Duration cpMemberRemoval,
    int partitionCount,
    int storeBackupCount) {

  /** Whether this process is a cluster member or a client of a running cluster. */
  public enum Mode {
    /** This process starts a member (data and, among the first CP members, CP). */
    EMBEDDED,
    /** This process connects as a client to a cluster of at least 3 CP members. */
    CLIENT
  }

  /** The namespace of every key, without the dot. */
  public static final String NAMESPACE = "hazelcast";

  /** Key of {@link #mode()}. */
  public static final String MODE = "hazelcast.mode";

  /** Key of {@link #clusterName()}. */
  public static final String CLUSTER_NAME = "hazelcast.cluster-name";

  /** Key of {@link #members()}. */
  public static final String MEMBERS = "hazelcast.members";

  /** Key of {@link #bindAddress()}. */
  public static final String BIND_ADDRESS = "hazelcast.bind-address";

  /** Key of {@link #port()}. */
  public static final String PORT = "hazelcast.port";

  /** Key of {@link #portCount()}. */
  public static final String PORT_COUNT = "hazelcast.port-count";

  /** Key of {@link #cpMemberCount()}. */
  public static final String CP_MEMBER_COUNT = "hazelcast.cp-member-count";

  /** Key of {@link #joinTimeout()}. */
  public static final String JOIN_TIMEOUT = "hazelcast.join-timeout";

  /** Key of {@link #heartbeatInterval()}. */
  public static final String HEARTBEAT_INTERVAL = "hazelcast.heartbeat-interval";

  /** Key of {@link #memberTimeout()}. */
  public static final String MEMBER_TIMEOUT = "hazelcast.member-timeout";

  /** Key of {@link #cpMemberRemoval()}. */
  public static final String CP_MEMBER_REMOVAL = "hazelcast.cp-member-removal";

  /** Key of {@link #partitionCount()}. */
  public static final String PARTITION_COUNT = "hazelcast.partition-count";

  /** Key of {@link #storeBackupCount()}. */
  public static final String STORE_BACKUP_COUNT = "hazelcast.store-backup-count";

  /** Every key this config knows, in documentation order. */
  public static final List<String> KEYS =
      List.of(
          MODE,
          CLUSTER_NAME,
          MEMBERS,
          BIND_ADDRESS,
          PORT,
          PORT_COUNT,
          CP_MEMBER_COUNT,
          JOIN_TIMEOUT,
          HEARTBEAT_INTERVAL,
          MEMBER_TIMEOUT,
          CP_MEMBER_REMOVAL,
          PARTITION_COUNT,
          STORE_BACKUP_COUNT);

  /** Default of {@link #mode()}. */
  public static final Mode DEFAULT_MODE = Mode.EMBEDDED;

  /** Default of {@link #clusterName()}. */
  public static final String DEFAULT_CLUSTER_NAME = "kvtier";

  /** Default of {@link #members()}: every port of the range on loopback. */
  public static final List<String> DEFAULT_MEMBERS = List.of("127.0.0.1");

  /** Default of {@link #bindAddress()}: loopback only. */
  public static final String DEFAULT_BIND_ADDRESS = "127.0.0.1";

  /** Default of {@link #port()}: Hazelcast's usual first port. */
  public static final int DEFAULT_PORT = 5701;

  /** Default of {@link #portCount()}: room for 10 members on one host. */
  public static final int DEFAULT_PORT_COUNT = 10;

  /** Default of {@link #cpMemberCount()}: the smallest CP subsystem that survives a loss. */
  public static final int DEFAULT_CP_MEMBER_COUNT = 3;

  /** Default of {@link #joinTimeout()}. */
  public static final Duration DEFAULT_JOIN_TIMEOUT = Duration.ofSeconds(60);

  /** Default of {@link #heartbeatInterval()}. */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(1);

  /** Default of {@link #memberTimeout()}: Hazelcast's 60 s is long for a rank group. */
  public static final Duration DEFAULT_MEMBER_TIMEOUT = Duration.ofSeconds(10);

  /** Default of {@link #cpMemberRemoval()}. */
  public static final Duration DEFAULT_CP_MEMBER_REMOVAL = Duration.ofSeconds(60);

  /** Default of {@link #partitionCount()}: Hazelcast's default. */
  public static final int DEFAULT_PARTITION_COUNT = 271;

  /** Default of {@link #storeBackupCount()}: a page survives the loss of one member. */
  public static final int DEFAULT_STORE_BACKUP_COUNT = 1;

  /** The configuration with every default. */
  public static final HazelcastConfig DEFAULTS =
      new HazelcastConfig(
          DEFAULT_MODE,
          DEFAULT_CLUSTER_NAME,
          DEFAULT_MEMBERS,
          DEFAULT_BIND_ADDRESS,
          DEFAULT_PORT,
          DEFAULT_PORT_COUNT,
          DEFAULT_CP_MEMBER_COUNT,
          DEFAULT_JOIN_TIMEOUT,
          DEFAULT_HEARTBEAT_INTERVAL,
          DEFAULT_MEMBER_TIMEOUT,
          DEFAULT_CP_MEMBER_REMOVAL,
          DEFAULT_PARTITION_COUNT,
          DEFAULT_STORE_BACKUP_COUNT);

  /** Reads the {@code hazelcast.*} keys; {@link #fromProperties} and the config tests use it. */
  public static final ConfigParser<HazelcastConfig> PARSER =
      ConfigParser.of(NAMESPACE, HazelcastConfig::read);

  /** Validates and copies the fields. */
  public HazelcastConfig {
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(clusterName, "clusterName");
    if (!clusterName.matches("[A-Za-z0-9._-]+")) {
      throw new IllegalArgumentException(
          CLUSTER_NAME + "=" + clusterName + " may hold only letters, digits, '.', '_' and '-'");
    }
    members = List.copyOf(Objects.requireNonNull(members, "members"));
    if (members.isEmpty()) {
      throw new IllegalArgumentException(
          MEMBERS + " is empty: list at least one host or host:port, for example 127.0.0.1");
    }
    for (String m : members) {
      if (m.isBlank() || m.contains(",") || m.strip().length() != m.length()) {
        throw new IllegalArgumentException(
            MEMBERS + " has the entry '" + m + "': write host or host:port, comma separated");
      }
    }
    Objects.requireNonNull(bindAddress, "bindAddress");
    if (bindAddress.isBlank()) {
      throw new IllegalArgumentException(
          BIND_ADDRESS + " is blank: write an interface address such as 127.0.0.1");
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException(PORT + "=" + port + " must be in [1, 65535]");
    }
    if (portCount < 1 || port + portCount - 1 > 65535) {
      throw new IllegalArgumentException(
          PORT_COUNT
              + "="
              + portCount
              + " must be >= 1 and keep port + count - 1 <= 65535"
              + " (port="
              + port
              + ")");
    }
    if (cpMemberCount != 0 && cpMemberCount < 3) {
      throw new IllegalArgumentException(
          CP_MEMBER_COUNT
              + "="
              + cpMemberCount
              + " must be 0 (no CP subsystem) or at least 3:"
              + " Raft needs 3 CP members to survive the loss of one");
    }
    positive(JOIN_TIMEOUT, joinTimeout);
    int heartbeat = wholeSeconds(HEARTBEAT_INTERVAL, heartbeatInterval);
    int memberSilence = wholeSeconds(MEMBER_TIMEOUT, memberTimeout);
    int removal = wholeSeconds(CP_MEMBER_REMOVAL, cpMemberRemoval);
    if (memberSilence <= heartbeat) {
      throw new IllegalArgumentException(
          MEMBER_TIMEOUT
              + "="
              + memberSilence
              + "s must be longer than "
              + HEARTBEAT_INTERVAL
              + "="
              + heartbeat
              + "s");
    }
    if (removal < memberSilence) {
      throw new IllegalArgumentException(
          CP_MEMBER_REMOVAL
              + "="
              + removal
              + "s must be at least "
              + MEMBER_TIMEOUT
              + "="
              + memberSilence
              + "s (Hazelcast requires the CP session TTL, which is the member"
              + " timeout, to be at most the auto-removal time)");
    }
    if (partitionCount < 1) {
      throw new IllegalArgumentException(PARTITION_COUNT + "=" + partitionCount + " must be >= 1");
    }
    if (storeBackupCount < 0 || storeBackupCount > 6) {
      throw new IllegalArgumentException(
          STORE_BACKUP_COUNT + "=" + storeBackupCount + " must be in [0, 6]");
    }
  }

  private static void positive(String key, Duration d) {
    Objects.requireNonNull(d, key);
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(key + "=" + d + " must be positive");
    }
  }

  /** The whole seconds of a duration that Hazelcast takes in seconds, at least 1. */
  private static int wholeSeconds(String key, Duration d) {
    Objects.requireNonNull(d, key);
    if (d.getNano() != 0 || d.toSeconds() < 1 || d.toSeconds() > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          key
              + "="
              + ConfigValues.formatDuration(d)
              + " must be a positive whole number of"
              + " seconds (Hazelcast counts it in seconds), for example 5s");
    }
    return (int) d.toSeconds();
  }

  /**
   * Parses the {@code hazelcast.*} keys of a property map; keys of other namespaces are ignored,
   * keys not set keep their default.
   *
   * @param properties full keys (for example {@code hazelcast.port}) to raw values
   * @return the config
   * @throws IllegalArgumentException for an unknown {@code hazelcast.*} key (naming the closest
   *     and listing the known keys) or a bad value (naming the key and the value)
   */
  public static HazelcastConfig fromProperties(Map<String, String> properties) {
    return PARSER.parse(properties);
  }

  private static HazelcastConfig read(ConfigReader r) {
    return new HazelcastConfig(
        r.get(MODE, HazelcastConfig::parseMode).orElse(DEFAULT_MODE),
        r.getString(CLUSTER_NAME, DEFAULT_CLUSTER_NAME),
        r.get(MEMBERS, HazelcastConfig::parseMembers).orElse(DEFAULT_MEMBERS),
        r.getString(BIND_ADDRESS, DEFAULT_BIND_ADDRESS),
        r.getInt(PORT, DEFAULT_PORT),
        r.getInt(PORT_COUNT, DEFAULT_PORT_COUNT),
        r.getInt(CP_MEMBER_COUNT, DEFAULT_CP_MEMBER_COUNT),
        r.getDuration(JOIN_TIMEOUT, DEFAULT_JOIN_TIMEOUT),
        r.getDuration(HEARTBEAT_INTERVAL, DEFAULT_HEARTBEAT_INTERVAL),
        r.getDuration(MEMBER_TIMEOUT, DEFAULT_MEMBER_TIMEOUT),
        r.getDuration(CP_MEMBER_REMOVAL, DEFAULT_CP_MEMBER_REMOVAL),
        r.getInt(PARTITION_COUNT, DEFAULT_PARTITION_COUNT),
        r.getInt(STORE_BACKUP_COUNT, DEFAULT_STORE_BACKUP_COUNT));
  }

  /**
   * This config with one key set to a new raw value.
   *
   * @param key a key of {@link #KEYS}
   * @param value the raw value, as in a property file
   * @return the new config
   */
  public HazelcastConfig with(String key, String value) {
    Map<String, String> properties = new LinkedHashMap<>(toProperties());
    properties.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
    return fromProperties(properties);
  }

  /**
   * Every key with its value, in a form that {@link #fromProperties} reads back to an equal
   * config.
   *
   * @return key to raw value, in {@link #KEYS} order
   */
  public Map<String, String> toProperties() {
    Map<String, String> out = new LinkedHashMap<>();
    out.put(MODE, mode.name().toLowerCase(Locale.ROOT));
    out.put(CLUSTER_NAME, clusterName);
    out.put(MEMBERS, String.join(",", members));
    out.put(BIND_ADDRESS, bindAddress);
    out.put(PORT, Integer.toString(port));
    out.put(PORT_COUNT, Integer.toString(portCount));
    out.put(CP_MEMBER_COUNT, Integer.toString(cpMemberCount));
    out.put(JOIN_TIMEOUT, ConfigValues.formatDuration(joinTimeout));
    out.put(HEARTBEAT_INTERVAL, ConfigValues.formatDuration(heartbeatInterval));
    out.put(MEMBER_TIMEOUT, ConfigValues.formatDuration(memberTimeout));
    out.put(CP_MEMBER_REMOVAL, ConfigValues.formatDuration(cpMemberRemoval));
    out.put(PARTITION_COUNT, Integer.toString(partitionCount));
    out.put(STORE_BACKUP_COUNT, Integer.toString(storeBackupCount));
    return out;
  }

  /**
   * Whether an embedded member listens on every interface ({@code 0.0.0.0}).
   *
   * @return true only if {@link #bindAddress()} asks for it
   */
  public boolean bindsAllInterfaces() {
    return bindAddress.equals("0.0.0.0") || bindAddress.equals("*");
  }

  private static Mode parseMode(String value) {
    try {
      return ConfigValues.parseEnum(Mode.class, "mode", value);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          e.getMessage()
              + " (embedded: this process starts a member; client: it connects to a"
              + " running cluster)",
          e);
    }
  }

  private static List<String> parseMembers(String value) {
    List<String> out = new ArrayList<>();
    for (String part : value.split(",", -1)) {
      String m = part.strip();
      if (m.isEmpty()) {
        throw new IllegalArgumentException(
            MEMBERS
                + "="
                + value
                + " has an empty entry: write host or host:port, comma"
                + " separated, for example 127.0.0.1:5701,127.0.0.1:5702");
      }
      out.add(m);
    }
    return out;
  }
}
