package io.kvtier.examples.model;

import io.kvtier.core.cache.CacheStats;
import io.kvtier.core.cache.PoolUsage;

/**
 * Running totals of a {@link ModelEngine}, readable from any thread (a metrics scrape) while the
 * engine's thread updates them: one writer, volatile fields, so a reader sees each value whole
 * but not a consistent set of them.
 */
public final class EngineStats {
  private volatile long requests;
  private volatile long promptTokens;
  private volatile long deviceHitTokens;
  private volatile long hostHitTokens;
  private volatile long computedTokens;
  private volatile long generatedTokens;
  private volatile long loadFailures;
  private volatile long poolExhausted;
  private volatile PoolUsage device;
  private volatile PoolUsage host;
  private volatile CacheStats cache;

  EngineStats(PoolUsage device, PoolUsage host, CacheStats cache) {
    this.device = device;
    this.host = host;
    this.cache = cache;
  }

  // The engine's thread is the only writer, so read-modify-write of a volatile is safe here.
  void recordCompletion(int prompt, Completion completion) {
    requests++;
    promptTokens += prompt;
    deviceHitTokens += completion.deviceHitTokens();
    hostHitTokens += completion.hostHitTokens();
    computedTokens += prompt - completion.cachedTokens();
    generatedTokens += completion.tokens().length;
  }

  void recordLoadFailure() {
    loadFailures++;
  }

  void recordPoolExhausted() {
    poolExhausted++;
  }

  void recordUsage(PoolUsage deviceUsage, PoolUsage hostUsage, CacheStats cacheStats) {
    device = deviceUsage;
    host = hostUsage;
    cache = cacheStats;
  }

  /**
   * Requests completed.
   *
   * @return the count
   */
  public long requests() {
    return requests;
  }

  /**
   * Prompt tokens of completed requests.
   *
   * @return the count
   */
  public long promptTokens() {
    return promptTokens;
  }

  /**
   * Prompt tokens whose KV was already on the device (L1 hits).
   *
   * @return the count
   */
  public long deviceHitTokens() {
    return deviceHitTokens;
  }

  /**
   * Prompt tokens whose KV was loaded back from the host tier (L2 hits).
   *
   * @return the count
   */
  public long hostHitTokens() {
    return hostHitTokens;
  }

  /**
   * Prompt tokens the model computed (misses in every tier).
   *
   * @return the count
   */
  public long computedTokens() {
    return computedTokens;
  }

  /**
   * Tokens generated.
   *
   * @return the count
   */
  public long generatedTokens() {
    return generatedTokens;
  }

  /**
   * Load-backs that failed to copy, after which the request was computed again.
   *
   * @return the count
   */
  public long loadFailures() {
    return loadFailures;
  }

  /**
   * Requests refused because the device pool stayed full after eviction.
   *
   * @return the count
   */
  public long poolExhausted() {
    return poolExhausted;
  }

  /**
   * The device pool's accounting after the last request or sync.
   *
   * @return the usage
   */
  public PoolUsage deviceUsage() {
    return device;
  }

  /**
   * The host pool's accounting after the last request or sync.
   *
   * @return the usage
   */
  public PoolUsage hostUsage() {
    return host;
  }

  /**
   * The cache's replicated counters (evictions, backups, load-backs) after the last request or
   * sync.
   *
   * @return the counters
   */
  public CacheStats cacheStats() {
    return cache;
  }
}
