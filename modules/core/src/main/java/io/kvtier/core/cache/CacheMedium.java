package io.kvtier.core.cache;

/**
 * Where a cached block is, as the KV events report it ({@link CacheEventListener}): the device
 * pool (L1), the host pool (L2) or the L3 store. {@link #wireName} is the name the ecosystem's
 * event schemas use for the first two; an L3 store is reported under its provider's name by
 * the publisher, which knows it.
 */
public enum CacheMedium {
  /** The device pool (L1): {@code "GPU"} on the wire. */
  DEVICE("GPU"),
  /** The host pool (L2): {@code "CPU"} on the wire. */
  HOST("CPU"),
  /** The L3 store: on the wire the store's name, which the publisher supplies. */
  L3("L3");

  private final String wireName;

  CacheMedium(String wireName) {
    this.wireName = wireName;
  }

  /**
   * The medium's name in vLLM's and SGLang's event schema ({@code "GPU"}, {@code "CPU"}); {@code
   * "L3"} for the store, which a publisher replaces by the store's name.
   *
   * @return the name
   */
  public String wireName() {
    return wireName;
  }
}
