package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.completions.CompletionCreateParams;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.llama.ArrayKvStore;
import io.kvtier.model.llama.LlamaModel;
import io.kvtier.model.llama.LlamaServingModel;
import io.kvtier.server.CompletionServer;
import io.kvtier.testkit.SharedFiles;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The acceptance of a real model through a real client: OpenAI's Java SDK chats with stories260K
 * served by kvtier (its own tokenizer, no chat template: the fallback joins the messages' text)
 * on two ranks, and gets the model's greedy story, the words of {@link LlamaModel}'s own greedy
 * decode of the same prompt (the engine-independent reference); asked again, the reply is the
 * same and the prompt's whole pages come from the cache. With a temperature and a seed, the same
 * sampled story twice.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class StoriesOpenAiSdkTest {
  private static final int TOKENS = 48;

  private static Path stories() {
    return SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
  }

  @Test
  void theSdkChatsWithStoriesAndGetsItsGreedyStory() throws Exception {
    Path path = stories();
    String question = "Once upon a time, there was a little dog named";
    try (LlamaServingModel llama =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()))) {
      int[] prompt = llama.text().chat(List.of(new ModelText.Message("user", question)));
      String expected = greedyText(llama, prompt);

      try (HttpServed served = serve(llama, 2, "stories-sdk-")) {
        OpenAIClient client = client(served);
        try {
          ChatCompletionCreateParams params =
              ChatCompletionCreateParams.builder()
                  .model(llama.name())
                  .addUserMessage(question)
                  .maxCompletionTokens(TOKENS)
                  .build();
          ChatCompletion first = client.chat().completions().create(params);
          ChatCompletion again = client.chat().completions().create(params);

          String reply = first.choices().get(0).message().content().orElseThrow();
          System.out.println("[stories] " + question + " -> " + reply);
          assertThat(reply).isEqualTo(expected).isNotBlank();
          assertThat(again.choices().get(0).message().content()).contains(reply);
          assertThat(first.usage().orElseThrow().promptTokens()).isEqualTo(prompt.length);
          long cached =
              again
                  .usage()
                  .orElseThrow()
                  .promptTokensDetails()
                  .orElseThrow()
                  .cachedTokens()
                  .orElseThrow();
          assertThat(cached).isEqualTo((prompt.length - 1) / 4 * 4L);

          // Sampling through the SDK: a seed tells the same story twice, not the greedy one.
          ChatCompletionCreateParams sampled =
              params.toBuilder().temperature(0.9).topP(0.95).seed(7L).build();
          String once = text(client.chat().completions().create(sampled));
          String twice = text(client.chat().completions().create(sampled));
          System.out.println("[stories] sampled, seed 7: " + once);
          assertThat(twice).isEqualTo(once);
          assertThat(once).isNotBlank().isNotEqualTo(reply);
        } finally {
          client.close();
        }
      }
    }
  }

  /**
   * OpenAI's {@code echo} through the SDK: the text starts with the prompt, and with {@code
   * logprobs} the SDK reads the prompt's tokens first, the first with no log-probability, the
   * others the model's own (held to a direct decode by StoriesLogprobsTest): how
   * lm-evaluation-harness scores a continuation.
   */
  @Test
  void theSdkGetsThePromptEchoedWithItsLogprobs() throws Exception {
    Path path = stories();
    try (LlamaServingModel llama =
            (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()));
        HttpServed served = serve(llama, 1, "stories-echo-")) {
      OpenAIClient client = client(served);
      try {
        String prompt = "Once upon a time, there was a cat";
        com.openai.models.completions.Completion echoed =
            client
                .completions()
                .create(
                    CompletionCreateParams.builder()
                        .model(llama.name())
                        .prompt(prompt)
                        .maxTokens(1)
                        .echo(true)
                        .logprobs(1)
                        .build());
        com.openai.models.completions.CompletionChoice choice = echoed.choices().get(0);
        assertThat(choice.text()).startsWith(prompt).isNotEqualTo(prompt);
        com.openai.models.completions.CompletionChoice.Logprobs lp =
            choice.logprobs().orElseThrow();
        int[] tokens = llama.text().encode(prompt);
        List<String> shown = lp.tokens().orElseThrow();
        List<Double> logprobs = lp.tokenLogprobs().orElseThrow();
        assertThat(shown).hasSize(tokens.length + 1);
        assertThat(logprobs).hasSize(tokens.length + 1);
        assertThat(logprobs.get(0)).as("no position predicts the first token").isNull();
        for (int i = 1; i < logprobs.size(); i++) {
          assertThat(logprobs.get(i)).as("token %d", i).isNotNull().isNegative();
        }
        assertThat(String.join("", shown.subList(1, tokens.length)))
            .as("the prompt's tokens after BOS")
            .isEqualTo(" " + prompt);
      } finally {
        client.close();
      }
    }
  }

  /** The engine on sim pools of the model's layout, {@code ranks} threads, behind the server. */
  private static HttpServed serve(LlamaServingModel llama, int ranks, String group)
      throws java.io.IOException {
    KvTierConfig config =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .collective("local")
            .ranks(ranks)
            .layout(llama.layers(), llama.kvHeads(), llama.headSize(), Float.BYTES, 4)
            .devicePages(256)
            .hostPages(512)
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(llama.vocabularySize())
            .collectiveTimeout(Duration.ofSeconds(60))
            .build();
    return HttpServed.open(
        llama,
        config,
        EngineSettings.DEFAULTS.withGroup(group + System.nanoTime()),
        RankSlot.Hooks.NONE,
        new CompletionServer.Options(
            llama.name(),
            java.util.Optional.empty(),
            1 << 20,
            Duration.ofSeconds(30),
            Duration.ofMinutes(2),
            java.util.Optional.empty()));
  }

  private static OpenAIClient client(HttpServed served) {
    return OpenAIOkHttpClient.builder()
        .baseUrl(served.base() + "/v1")
        .apiKey("unused")
        .maxRetries(0)
        .timeout(Duration.ofSeconds(60))
        .build();
  }

  private static String text(ChatCompletion completion) {
    return completion.choices().get(0).message().content().orElseThrow();
  }

  /** The reply's text as the model itself decodes greedily, cut at an end-of-generation token. */
  private static String greedyText(LlamaServingModel llama, int[] prompt) {
    LlamaModel model = llama.model();
    ArrayKvStore kv =
        new ArrayKvStore(
            model.hyperparameters().blockCount(), model.kvDim(), prompt.length + TOKENS);
    float[][] logits = model.forward(prompt, 0, kv, false);
    float[] last = logits[0];
    int[] out = new int[TOKENS];
    int n = 0;
    for (int position = prompt.length; n < TOKENS; position++) {
      int token = argmax(last);
      if (llama.text().endOfReply().contains(token)) {
        break;
      }
      out[n++] = token;
      if (n < TOKENS) {
        last = model.decode(token, position, kv);
      }
    }
    ModelText.Decoder decoder = llama.text().decoder(prompt, true);
    StringBuilder text = new StringBuilder();
    for (int token : Arrays.copyOf(out, n)) {
      text.append(decoder.add(token));
    }
    return text.append(decoder.finish()).toString();
  }

  private static int argmax(float[] logits) {
    int best = 0;
    for (int i = 1; i < logits.length; i++) {
      if (logits[i] > logits[best]) {
        best = i;
      }
    }
    return best;
  }
}
