package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.route.PromptTokens;
import io.kvtier.serving.ModelText;
import io.kvtier.testkit.SharedFiles;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@code kvtier route}'s usage errors; the router itself is tested in modules/route. */
class RouteCommandTest {

  private static String[] run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int status = KvTierCli.run(new PrintWriter(out), new PrintWriter(err), args);
    return new String[] {Integer.toString(status), out.toString(), err.toString()};
  }

  @Test
  void theCommandIsListedAndAReplicaIsRequired() {
    assertThat(run("--help")[1]).contains("route");
    String[] none = run("route");
    assertThat(none[0]).isEqualTo("2");
    assertThat(none[2]).contains("--replica");
  }

  @Test
  void aBadReplicaOrWeightIsAUsageErrorThatSaysTheForm() {
    String[] bad = run("route", "--replica", "http://h:8000");
    assertThat(bad[0]).isEqualTo("2");
    assertThat(bad[2]).contains("HTTP_BASE,EVENTS_ENDPOINT[,REPLAY_ENDPOINT]");
    String[] weight = run("route", "--replica", "http://h:8000,tcp://h:5557", "--host-weight", "3");
    assertThat(weight[0]).isEqualTo("2");
    assertThat(weight[2]).contains("hostWeight=3.0");
  }

  @Test
  void aModelThatCannotBeOpenedIsAUsageErrorNamingIt() {
    String[] missing =
        run("route", "--replica", "http://h:8000,tcp://h:5557", "--model", "no-such-model.gguf");
    assertThat(missing[0]).isEqualTo("2");
    assertThat(missing[2]).contains("--model no-such-model.gguf", "does not exist");
  }

  /**
   * With {@code --model FILE.gguf} the router reads a text prompt and chat messages into the ids
   * serve caches for the same file (its tokenizer, BOS and chat template), not the tiny
   * transformer's bytes; ids are taken as given, and a message the router cannot read gives none.
   */
  @Test
  void aGgufModelsPromptsBecomeTheIdsServeCachesForIt() {
    Path file = SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
    try (ServedModel served = ServedModel.gguf(file, Optional.empty())) {
      ModelText text = served.model().text();
      PromptTokens prompts = RouteCommand.textPrompts(text);
      String prompt = "Once upon a time, there was a little girl";

      int[] ids = prompts.tokens(Map.of("prompt", prompt));

      assertThat(ids).containsExactly(text.encode(prompt)).hasSizeLessThan(prompt.length());
      assertThat(ids).isNotEqualTo(PromptTokens.BYTES.tokens(Map.of("prompt", prompt)));
      assertThat(
              prompts.tokens(
                  Map.of(
                      "messages",
                      List.of(
                          Map.of("role", "system", "content", "Tell a story."),
                          Map.of("role", "user", "content", prompt)))))
          .containsExactly(
              text.chat(
                  List.of(
                      new ModelText.Message("system", "Tell a story."),
                      new ModelText.Message("user", prompt))));
      assertThat(prompts.tokens(Map.of("prompt", List.of(1, 403)))).containsExactly(1, 403);
      assertThat(prompts.tokens(Map.of("messages", List.of(Map.of("role", "user", "content", 3)))))
          .isEmpty();
    }
  }

  @Test
  void aBadPolicyOrARingbufferWithoutAClusterIsAUsageError() {
    String[] policy = run("route", "--replica", "http://h:8000,tcp://h:5557", "--policy", "random");
    assertThat(policy[0]).isEqualTo("2");
    assertThat(policy[2]).contains("--policy random", "[prefix, round-robin]");
    String[] ring = run("route", "--port", "0", "--replica", "http://h:8000,hazelcast:events-0");
    assertThat(ring[0]).isEqualTo("2");
    assertThat(ring[2]).contains("--hazelcast-addresses");
  }
}
