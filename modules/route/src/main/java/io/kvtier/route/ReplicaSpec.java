package io.kvtier.route;

import java.net.URI;
import java.util.Objects;
import java.util.Optional;

/**
 * One {@code kvtier serve} replica behind the router.
 *
 * @param http its HTTP base, for example {@code http://10.0.0.5:8000}
 * @param events its KV event PUB address ({@code kvtier.events.endpoint}), or {@code
 *     hazelcast:NAME} for the Hazelcast ringbuffer it publishes to ({@code
 *     kvtier.events.ringbuffer})
 * @param replay its replay address ({@code kvtier.events.replay-endpoint}), empty if none
 */
public record ReplicaSpec(URI http, String events, Optional<String> replay) {

  /** Validates the fields. */
  public ReplicaSpec {
    Objects.requireNonNull(http, "http");
    Objects.requireNonNull(events, "events");
    Objects.requireNonNull(replay, "replay");
    if (!"http".equals(http.getScheme()) && !"https".equals(http.getScheme())) {
      throw new IllegalArgumentException(
          "replica " + http + ": the HTTP base must be http://host:port or https://host:port");
    }
  }

  /** The prefix of {@link #events} that names a Hazelcast ringbuffer. */
  public static final String HAZELCAST = "hazelcast:";

  /** The Hazelcast ringbuffer the replica publishes to, if {@link #events} names one. */
  public Optional<String> ringbuffer() {
    return events.startsWith(HAZELCAST)
        ? Optional.of(events.substring(HAZELCAST.length()))
        : Optional.empty();
  }

  /**
   * Parses {@code HTTP_BASE,EVENTS[,REPLAY]}, for example {@code
   * http://h:8000,tcp://h:5557,tcp://h:5558}, or {@code http://h:8000,hazelcast:NAME}.
   *
   * @param text the command-line form
   * @return the replica
   * @throws IllegalArgumentException naming the text and the expected form
   */
  public static ReplicaSpec parse(String text) {
    return parse("--replica", text);
  }

  /**
   * Parses a replica of a pool: {@code HTTP_BASE,EVENTS[,REPLAY]} or {@code
   * HTTP_BASE,hazelcast:NAME}.
   *
   * @param option the option that gave it ({@code --replica}, {@code --prefill}, {@code
   *     --decode}), for the message
   * @param text the command-line form
   * @return the replica
   * @throws IllegalArgumentException naming the option, the text and the expected form
   */
  public static ReplicaSpec parse(String option, String text) {
    String[] parts = text.split(",");
    if (parts.length < 2
        || parts.length > 3
        || !(parts[1].contains("://")
            || (parts[1].strip().startsWith(HAZELCAST) && parts.length == 2))) {
      throw new IllegalArgumentException(
          option
              + " "
              + text
              + ": write HTTP_BASE,EVENTS_ENDPOINT[,REPLAY_ENDPOINT], for example"
              + " http://host:8000,tcp://host:5557,tcp://host:5558, or"
              + " HTTP_BASE,hazelcast:RINGBUFFER");
    }
    URI http;
    try {
      http = URI.create(parts[0].strip());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(option + " " + text + ": " + e.getMessage(), e);
    }
    return new ReplicaSpec(
        http,
        parts[1].strip(),
        parts.length == 3 ? Optional.of(parts[2].strip()) : Optional.empty());
  }
}
