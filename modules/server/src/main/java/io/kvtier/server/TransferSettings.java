package io.kvtier.server;

import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;

/**
 * A replica's part in prefill/decode disaggregation ({@code kvtier serve --role}, docs/SERVE.md
 * "Prefill and decode replicas"): its role, and what a transfer handle must match to be decoded
 * here.
 *
 * @param role what the replica serves
 * @param enabled whether it takes {@code kv_transfer_params}: it has an L3 store shared with other
 *     replicas (the file store on one machine, the Hazelcast store across machines)
 * @param replicaId how its handles name it ({@code prefill_replica})
 * @param ranks the ranks of its group
 * @param parallel its parallel layout ({@code tp} or {@code cp})
 * @param pageSize tokens per KV page
 * @param pageBytes KV bytes of one page over all its ranks, for the transfer byte counts
 */
public record TransferSettings(
    Role role,
    boolean enabled,
    String replicaId,
    int ranks,
    String parallel,
    int pageSize,
    long pageBytes) {

  /** What a replica serves. */
  public enum Role {
    /** Prompts only: every request generates one token and publishes its prompt's pages. */
    PREFILL,
    /** Requests with a transfer handle (and ordinary ones); never a prefill request. */
    DECODE,
    /** Everything: ordinary, prefill and decode requests (the default). */
    BOTH;

    /**
     * The option's name, for example {@code prefill}.
     *
     * @return the lower-case name
     */
    public String configName() {
      return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Parses the option's value.
     *
     * @param value prefill, decode or both (any case)
     * @return the role
     * @throws IllegalArgumentException naming the value and the accepted names
     */
    public static Role parse(String value) {
      for (Role r : values()) {
        if (r.configName().equalsIgnoreCase(value.strip())) {
          return r;
        }
      }
      throw new IllegalArgumentException(
          "--role="
              + value
              + " is not a role: give one of "
              + String.join(", ", Arrays.stream(values()).map(Role::configName).toList()));
    }
  }

  /** A replica that serves everything and takes no handles (no shared store). */
  public static final TransferSettings NONE =
      new TransferSettings(Role.BOTH, false, "", 1, "tp", 1, 0);

  /** Validates the fields. */
  public TransferSettings {
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(replicaId, "replicaId");
    Objects.requireNonNull(parallel, "parallel");
    if (role != Role.BOTH && !enabled) {
      throw new IllegalArgumentException(
          "role " + role.configName() + " needs an L3 store shared with the other replicas");
    }
    if (ranks < 1 || pageSize < 1 || pageBytes < 0) {
      throw new IllegalArgumentException(
          "ranks="
              + ranks
              + ", pageSize="
              + pageSize
              + " must be >= 1 and pageBytes="
              + pageBytes
              + " >= 0");
    }
  }
}
