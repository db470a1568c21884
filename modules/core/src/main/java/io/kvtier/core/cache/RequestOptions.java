package io.kvtier.core.cache;

/**
 * Per-request settings for {@link RankCache#admit(long, int[], RequestOptions)}.
 *
 * @param namespace the LoRA id or cache salt; requests of different namespaces never share a
 *     node. 0 is the default namespace
 * @param priority eviction priority of the nodes the request inserts or hits (higher stays
 *     longer under the {@code priority} policy)
 * @param loadBackQuotaPages the most pages a load-back at admission may bring back; a host hit
 *     larger than this is not loaded at all. 0 disables load-back
 */
public record RequestOptions(long namespace, int priority, int loadBackQuotaPages) {

  /** Namespace 0, priority 0, load-back of any size. */
  public static final RequestOptions DEFAULT = new RequestOptions(0, 0, Integer.MAX_VALUE);

  /** Validates the fields. */
  public RequestOptions {
    if (loadBackQuotaPages < 0) {
      throw new IllegalArgumentException(
          "loadBackQuotaPages=" + loadBackQuotaPages + " must be >= 0 (0 disables load-back)");
    }
  }

  /**
   * These options with another namespace.
   *
   * @param ns the namespace
   * @return a copy
   */
  public RequestOptions withNamespace(long ns) {
    return new RequestOptions(ns, priority, loadBackQuotaPages);
  }

  /**
   * These options with another priority.
   *
   * @param p the priority
   * @return a copy
   */
  public RequestOptions withPriority(int p) {
    return new RequestOptions(namespace, p, loadBackQuotaPages);
  }

  /**
   * These options with another load-back quota.
   *
   * @param pages the quota in pages, 0 to disable load-back
   * @return a copy
   */
  public RequestOptions withLoadBackQuota(int pages) {
    return new RequestOptions(namespace, priority, pages);
  }
}
