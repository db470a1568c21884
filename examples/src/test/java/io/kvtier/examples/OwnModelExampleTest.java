package io.kvtier.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.serving.Completion;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class OwnModelExampleTest {

  @Test
  void aModelOfOnesOwnIsServedOnTheModulePathWithoutTheCli() throws Exception {
    // The examples run as named modules, and neither the command line nor the HTTP server nor
    // the tiny transformer nor the KV event publishers (ZeroMQ, Hazelcast) are there: the
    // serving engine and a backend are all it takes.
    assertThat(OwnModelExample.class.getModule().isNamed()).isTrue();
    ModuleLayer layer = OwnModelExample.class.getModule().getLayer();
    assertThat(layer.findModule("io.kvtier.serving")).isPresent();
    assertThat(layer.findModule("io.kvtier.cli")).isEmpty();
    assertThat(layer.findModule("io.kvtier.server")).isEmpty();
    assertThat(layer.findModule("io.kvtier.model.tiny")).isEmpty();
    assertThat(layer.findModule("info.picocli")).isEmpty();
    assertThat(layer.findModule("io.kvtier.events")).isEmpty();
    assertThat(layer.findModule("com.hazelcast.core")).isEmpty();

    List<Completion> completions = OwnModelExample.run(RankLoop.config(Map.of()));

    assertThat(completions).hasSize(3).allSatisfy(c -> assertThat(c.tokens()).hasSize(4));
    // The 32-token system prompt (8 pages of 4) is cached after the first client.
    assertThat(completions.get(0).cachedTokens()).isZero();
    assertThat(completions.get(1).cachedTokens()).isEqualTo(32);
    assertThat(completions.get(2).cachedTokens()).isEqualTo(32);
    // The model's own rule: each token follows from the one before.
    int last = 300;
    for (int token : completions.get(2).tokens()) {
      assertThat(token).isEqualTo((last * 31 + 7) % 32000);
      last = token;
    }
  }
}
