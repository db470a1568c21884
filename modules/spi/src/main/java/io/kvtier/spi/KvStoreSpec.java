package io.kvtier.spi;

import java.util.Objects;

/**
 * What an L3 store holds.
 *
 * @param layout the KV layout of one page (a stored page is {@code layout.pageBytes()} bytes)
 * @param capacityBytes the most bytes of page data the store keeps; it evicts beyond that
 * @param namespace a name separating stores of different models or deployments (part of the
 *     location, for example a directory or map name); letters, digits, '-', '_' and '.'
 */
public record KvStoreSpec(KvLayout layout, long capacityBytes, String namespace) {

  /** Validates the fields. */
  public KvStoreSpec {
    Objects.requireNonNull(layout, "layout");
    Objects.requireNonNull(namespace, "namespace");
    if (capacityBytes < layout.pageBytes()) {
      throw new IllegalArgumentException(
          "capacityBytes="
              + capacityBytes
              + " is less than one page of "
              + layout.pageBytes()
              + " bytes");
    }
    if (!namespace.matches("[A-Za-z0-9._-]+")) {
      throw new IllegalArgumentException(
          "namespace='" + namespace + "' may hold only letters, digits, '.', '_' and '-'");
    }
  }
}
