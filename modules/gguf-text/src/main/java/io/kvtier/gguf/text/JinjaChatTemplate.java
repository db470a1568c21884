package io.kvtier.gguf.text;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import io.kvtier.serving.ModelText;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import jinjava.javax.el.CompositeELResolver;
import jinjava.javax.el.ELResolver;

/**
 * A Hugging Face chat template (the Jinja source of {@code tokenizer.chat_template}) rendered by
 * HubSpot's Jinjava as {@code transformers}' {@code apply_chat_template} renders it: blocks trim
 * their newline and strip their line's indent ({@code trim_blocks}, {@code lstrip_blocks}), a
 * template's one trailing newline is dropped, and the variables are {@code messages} (a list of
 * {@code {"role", "content"}}), {@code add_generation_prompt}, {@code bos_token}, {@code
 * eos_token} and the function {@code raise_exception(message)}.
 *
 * <p>A {@code developer} message is given to the template as {@code system}: templates predate
 * OpenAI's new name. No {@code strftime_now} is given, so templates that print today's date fall
 * back to their fixed one: a prompt that changed daily would never hit the KV cache.
 *
 * <p>Jinjava is not Python: the string methods templates call ({@code startswith}, {@code
 * endswith}, {@code strip}/{@code lstrip}/{@code rstrip} with or without characters, {@code
 * split}, {@code join}, {@code upper}, {@code lower}, {@code title}, {@code capitalize}, {@code
 * find}) are given Python's meaning ({@link PythonStringMethods}); another Python method, or a
 * construct Jinjava lacks, fails with a {@link ChatTemplateException} naming it. Immutable and
 * thread-safe.
 */
public final class JinjaChatTemplate {
  private final String source;
  private final String body;
  private final String bosToken;
  private final String eosToken;
  private final Jinjava jinjava;

  /**
   * @param source the template's Jinja source
   * @param bosToken the text of {@code bos_token} (empty where the vocabulary has none)
   * @param eosToken the text of {@code eos_token} (empty where the vocabulary has none)
   */
  public JinjaChatTemplate(String source, String bosToken, String eosToken) {
    this.source = Objects.requireNonNull(source, "source");
    // Jinja drops one trailing newline of a template's source (keep_trailing_newline=False)
    this.body =
        source.endsWith("\r\n")
            ? source.substring(0, source.length() - 2)
            : source.endsWith("\n") ? source.substring(0, source.length() - 1) : source;
    this.bosToken = Objects.requireNonNull(bosToken, "bosToken");
    this.eosToken = Objects.requireNonNull(eosToken, "eosToken");
    this.jinjava =
        new Jinjava(
            JinjavaConfig.newBuilder()
                .withTrimBlocks(true)
                .withLstripBlocks(true)
                // Jinjava's false strips the output's trailing newline, not the source's
                .withKeepTrailingNewline(true)
                .withElResolver(resolver())
                .build());
    jinjava
        .getGlobalContext()
        .registerFunction(
            new ELFunctionDefinition(
                "", "raise_exception", JinjaChatTemplate.class, "raiseException", String.class));
  }

  /** Python's string methods first, then Jinjava's own resolution (read-only, as HF's sandbox). */
  private static ELResolver resolver() {
    CompositeELResolver resolver = new CompositeELResolver();
    resolver.add(new PythonStringMethods());
    resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
    return resolver;
  }

  /** The Jinja source. */
  public String source() {
    return source;
  }

  /**
   * Renders a conversation.
   *
   * @param messages the messages, in order
   * @param addGenerationPrompt whether the text ends with the start of the assistant's reply
   * @return the rendered text, special tokens written as their text
   * @throws IllegalArgumentException if the template refuses the conversation ({@code
   *     raise_exception}), with its message
   * @throws ChatTemplateException if Jinjava cannot render the template
   */
  public String render(List<ModelText.Message> messages, boolean addGenerationPrompt) {
    List<Map<String, Object>> list = new ArrayList<>(messages.size());
    for (ModelText.Message m : messages) {
      Map<String, Object> message = new LinkedHashMap<>();
      message.put("role", m.role().equals("developer") ? "system" : m.role());
      message.put("content", m.content());
      list.add(message);
    }
    Map<String, Object> context = new HashMap<>();
    context.put("messages", list);
    context.put("add_generation_prompt", addGenerationPrompt);
    context.put("bos_token", bosToken);
    context.put("eos_token", eosToken);
    RenderResult result = jinjava.renderForResult(body, context);
    for (TemplateError error : result.getErrors()) {
      if (error.getSeverity() != TemplateError.ErrorType.FATAL) {
        continue;
      }
      for (Throwable t = error.getException(); t != null; t = t.getCause()) {
        if (t instanceof Raised raised) {
          throw new IllegalArgumentException(raised.getMessage());
        }
      }
      throw new ChatTemplateException(
          "the chat template cannot be rendered: "
              + error.getMessage()
              + " (template line "
              + error.getLineno()
              + "); give the model a template Jinjava can render");
    }
    return result.getOutput();
  }

  /**
   * The template's {@code raise_exception(message)}: the conversation is refused.
   *
   * @param message the template's reason
   * @return never
   */
  public static String raiseException(String message) {
    throw new Raised(message);
  }

  /** What {@code raise_exception} throws through Jinjava. */
  private static final class Raised extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Raised(String message) {
      super(message);
    }
  }
}
