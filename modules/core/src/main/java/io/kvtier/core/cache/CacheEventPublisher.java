package io.kvtier.core.cache;

/**
 * The KV event publisher of one rank, as a {@link CacheEventPublisherProvider} opens it: the
 * listener to register with the rank's cache, and what to close when the rank stops.
 */
public interface CacheEventPublisher extends AutoCloseable {
  /** Publishes nothing: its listener is {@link CacheEventListener#NONE}. */
  CacheEventPublisher NONE =
      new CacheEventPublisher() {
        @Override
        public CacheEventListener listener() {
          return CacheEventListener.NONE;
        }

        @Override
        public void close() {}

        @Override
        public String toString() {
          return "no KV event publisher";
        }
      };

  /**
   * The listener to register with the cache.
   *
   * @return {@link CacheEventListener#NONE} where this rank does not publish
   */
  CacheEventListener listener();

  /** Sends what is pending and releases the publisher's sockets or clients. */
  @Override
  void close();
}
