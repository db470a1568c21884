package io.kvtier.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvtier.core.rank.Sampling;
import io.kvtier.serving.ModelText;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Parses a {@code POST /v1/chat/completions} body into a {@link CompletionRequest} whose one
 * prompt is the messages under {@link ModelText#chat the model's chat template}. Messages have a
 * {@code role} (system, developer, user or assistant), a {@code content} (a string or an array of
 * {@code {"type": "text", "text": ...}} parts) and an optional {@code name}; tools, images and
 * audio are a 400 naming the field.
 */
final class ChatRequest {
  private static final Set<String> FIELDS =
      Set.of(
          "model",
          "messages",
          "max_tokens",
          "max_completion_tokens",
          "stream",
          "stream_options",
          "temperature",
          "top_p",
          "top_k",
          "n",
          "stop",
          "user",
          "seed",
          "presence_penalty",
          "frequency_penalty",
          "repetition_penalty",
          "logprobs",
          "top_logprobs",
          "logit_bias",
          "tools",
          "tool_choice",
          "parallel_tool_calls",
          "response_format",
          "store",
          "metadata",
          "cache_salt",
          "ignore_eos",
          "stop_token_ids",
          "min_tokens",
          "include_stop_str_in_output",
          "kv_transfer_params");

  private static final Set<String> MESSAGE_FIELDS = Set.of("role", "content", "name");
  private static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant");

  private ChatRequest() {}

  /**
   * Parses a chat body.
   *
   * @param body the parsed JSON
   * @param text the model's text, whose chat template renders the messages
   * @return the request, {@link CompletionRequest#chat()} true
   * @throws ApiException a 400 naming what is wrong: also a model without a chat template, and a
   *     conversation the template refuses (its reason in the message)
   */
  static CompletionRequest parse(JsonNode body, ModelText text) {
    BodyFields f =
        BodyFields.of(
            body,
            "",
            "{\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\", \"content\":"
                + " \"Hello\"}]}",
            FIELDS);
    String model = CompletionRequest.model(f);
    JsonNode messages = f.required("messages", "an array of {\"role\", \"content\"} objects");
    if (!messages.isArray() || messages.isEmpty()) {
      throw ApiException.badField(
          "messages",
          "messages must be a non-empty array of {\"role\", \"content\"} objects, not "
              + (messages.isArray() ? "an empty array" : BodyFields.describe(messages)));
    }
    List<ModelText.Message> parsed = new ArrayList<>(messages.size());
    for (int i = 0; i < messages.size(); i++) {
      parsed.add(message(messages.get(i), "messages[" + i + "]"));
    }
    OptionalInt maxTokens = f.integer("max_completion_tokens");
    OptionalInt deprecated = f.integer("max_tokens");
    if (maxTokens.isPresent() && deprecated.isPresent() && !maxTokens.equals(deprecated)) {
      throw ApiException.badField(
          "max_tokens",
          "max_tokens="
              + deprecated.getAsInt()
              + " and max_completion_tokens="
              + maxTokens.getAsInt()
              + " disagree: send only max_completion_tokens");
    }
    if (maxTokens.isEmpty()) {
      maxTokens = deprecated;
    }
    Sampling sampling = CompletionRequest.sampling(f);
    int n = CompletionRequest.choices(f);
    boolean logprobs = f.bool("logprobs").orElse(false);
    OptionalInt top = f.integer("top_logprobs");
    if (top.isPresent() && !logprobs) {
      throw ApiException.badField(
          "top_logprobs",
          "top_logprobs="
              + top.getAsInt()
              + " needs logprobs: true; send both, or leave top_logprobs out");
    }
    if (logprobs) {
      sampling =
          sampling.withLogprobs(CompletionRequest.topLogprobs(top.orElse(0), "top_logprobs"));
    }
    f.unsupported("tools");
    f.unsupported("tool_choice");
    f.unsupported("parallel_tool_calls");
    f.unsupported("store");
    f.unsupported("metadata");
    f.get("response_format")
        .ifPresent(
            r -> {
              String type =
                  BodyFields.of(r, "response_format", "{\"type\": \"text\"}", Set.of("type"))
                      .string("type")
                      .orElse("text");
              if (!type.equals("text")) {
                throw ApiException.badField(
                    "response_format.type",
                    "response_format.type=" + type + " is not supported: only text");
              }
            });
    f.string("user");
    boolean stream = f.bool("stream").orElse(false);
    StopRules stopRules = StopRules.parse(f);
    return new CompletionRequest(
        model,
        List.of(render(text, parsed)),
        maxTokens,
        stream,
        CompletionRequest.includeUsage(f),
        true,
        CompletionRequest.cacheSalt(f),
        stopRules.holdBack(sampling, text.endOfReply()),
        n,
        stopRules,
        false);
  }

  private static int[] render(ModelText text, List<ModelText.Message> messages) {
    try {
      return text.chat(messages);
    } catch (ModelText.TextUnavailableException e) {
      throw ApiException.badField("messages", e.getMessage());
    } catch (IllegalArgumentException e) {
      throw ApiException.badField(
          "messages", "the model's chat template refuses the messages: " + e.getMessage());
    }
  }

  private static ModelText.Message message(JsonNode value, String path) {
    BodyFields m =
        BodyFields.of(value, path, "{\"role\": \"user\", \"content\": \"Hello\"}", MESSAGE_FIELDS);
    String role =
        BodyFields.string(
            m.required("role", "system, developer, user or assistant"), m.param("role"));
    if (!ROLES.contains(role)) {
      throw ApiException.badField(
          m.param("role"),
          m.param("role")
              + "="
              + role
              + " is not supported: use system, developer, user or assistant");
    }
    m.string("name");
    JsonNode content = m.required("content", "the message's text");
    if (content.isTextual()) {
      return new ModelText.Message(role, content.textValue());
    }
    if (!content.isArray()) {
      throw ApiException.badField(
          m.param("content"),
          m.param("content")
              + " must be a string or an array of text parts, not "
              + BodyFields.describe(content));
    }
    StringBuilder text = new StringBuilder();
    for (int i = 0; i < content.size(); i++) {
      String partPath = m.param("content") + "[" + i + "]";
      BodyFields part =
          BodyFields.of(
              content.get(i),
              partPath,
              "{\"type\": \"text\", \"text\": \"Hello\"}",
              Set.of("type", "text"));
      String type = BodyFields.string(part.required("type", "text"), part.param("type"));
      if (!type.equals("text")) {
        throw ApiException.badField(
            part.param("type"),
            part.param("type") + "=" + type + " is not supported: kvtier serve takes text parts");
      }
      text.append(BodyFields.string(part.required("text", "the part's text"), part.param("text")));
    }
    return new ModelText.Message(role, text.toString());
  }
}
