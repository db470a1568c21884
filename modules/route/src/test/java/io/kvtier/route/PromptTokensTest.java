package io.kvtier.route;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The router tokenizes prompts as kvtier serve's byte tokenizer does. */
class PromptTokensTest {

  @Test
  void chatMessagesFollowServesChatTemplate() {
    Map<String, Object> body =
        Map.of(
            "messages",
            List.of(
                Map.of("role", "system", "content", "ab"),
                Map.of("role", "user", "content", List.of(Map.of("type", "text", "text", "c"))),
                Map.of("role", "assistant", "content", "d")));
    assertThat(PromptTokens.BYTES.tokens(body))
        .containsExactly(256, 'a', 'b', 259, 257, 'c', 259, 258, 'd', 259, 258);
  }

  @Test
  void textIsItsUtf8BytesAndIdsAreTakenAsTheyAre() {
    assertThat(PromptTokens.BYTES.tokens(Map.of("prompt", "hé"))).containsExactly('h', 0xC3, 0xA9);
    assertThat(PromptTokens.BYTES.tokens(Map.of("prompt", List.of(5, 6)))).containsExactly(5, 6);
    assertThat(PromptTokens.BYTES.tokens(Map.of("prompt_tokens", List.of(7)))).containsExactly(7);
  }

  @Test
  void whatServeWouldRefuseGivesNoTokens() {
    assertThat(
            PromptTokens.BYTES.tokens(
                Map.of("messages", List.of(Map.of("role", "tool", "content", "x")))))
        .isEmpty();
    assertThat(
            PromptTokens.BYTES.tokens(
                Map.of("messages", List.of(Map.of("role", "user", "content", 3)))))
        .isEmpty();
    assertThat(PromptTokens.BYTES.tokens(Map.of("model", "m"))).isEmpty();
  }
}
