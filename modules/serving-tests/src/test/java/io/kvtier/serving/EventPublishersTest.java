package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.CacheEventListener;
import io.kvtier.core.cache.CacheEventPublisher;
import io.kvtier.core.cache.CacheEventPublisherProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The engine opens KV event publishers through the one provider on the path, and without one
 * refuses keys that ask for events, naming them and the artifact to add.
 */
class EventPublishersTest {

  /** A provider that records what it was asked. */
  private static final class Recording implements CacheEventPublisherProvider {
    final List<String> opened = new ArrayList<>();

    @Override
    public CacheEventPublisher open(Map<String, String> properties, int rank, String l3Medium) {
      opened.add(properties + " rank " + rank + " " + l3Medium);
      return CacheEventPublisher.NONE;
    }
  }

  @Test
  void withoutAProviderNoKeysMeansNoPublisher() {
    assertThat(EventPublishers.open(List.of(), Map.of("kvtier.device", "sim"), 0, "none"))
        .isSameAs(CacheEventPublisher.NONE);
    assertThat(
            EventPublishers.open(List.of(), Map.of("kvtier.events.publisher", " none"), 0, "none")
                .listener())
        .isSameAs(CacheEventListener.NONE);
  }

  @Test
  void withoutAProviderAskingForEventsNamesTheKeyAndTheArtifact() {
    assertThatThrownBy(
            () ->
                EventPublishers.open(
                    List.of(),
                    Map.of(
                        "kvtier.events.publisher", "zmq",
                        "kvtier.events.endpoint", "tcp://*:5557"),
                    0,
                    "none"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.events.endpoint=tcp://*:5557, kvtier.events.publisher=zmq")
        .hasMessageContaining("kvtier-events");
  }

  @Test
  void theOneProviderOpensWithTheKeysAndRank() {
    Recording provider = new Recording();
    EventPublishers.open(List.of(provider), Map.of("kvtier.events.publisher", "zmq"), 1, "file");
    assertThat(provider.opened).containsExactly("{kvtier.events.publisher=zmq} rank 1 file");
  }

  @Test
  void twoProvidersAreAnErrorNamingBoth() {
    assertThatThrownBy(
            () -> EventPublishers.open(List.of(new Recording(), new Recording()), Map.of(), 0, "x"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(Recording.class.getName() + ", " + Recording.class.getName());
  }
}
