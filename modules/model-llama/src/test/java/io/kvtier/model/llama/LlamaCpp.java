package io.kvtier.model.llama;

import de.kherud.llama.InferenceParameters;
import de.kherud.llama.LlamaOutput;
import de.kherud.llama.ModelParameters;
import de.kherud.llama.args.LogFormat;
import java.lang.reflect.Field;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * llama.cpp through {@code de.kherud:llama} 4.2.0 (its server code in-process), as an oracle.
 *
 * <p>What the binding allows, found by trying: it reads GGUF v2 and v3; a prompt given as an
 * array of token ids is taken verbatim (no BOS added, unlike a text prompt); streamed generation
 * returns one output per token whose text is that token's piece, with a last empty output at the
 * stop; logits are not exposed, and asking for them ({@code n_probs > 0}) aborts the JVM (the
 * binding reads {@code probs}/{@code tok_str} where its llama.cpp writes
 * {@code top_probs}/{@code token}: {@code json.hpp:21450: GGML_ASSERT(it !=
 * m_data.m_value.object->end()) failed}). So the oracle's answers are greedy pieces.
 *
 * <p>No surefire set-up is needed: the tests run patched into the named module
 * {@code io.kvtier.model.llama} on the module path while test-scope jars, this binding among
 * them, stay on the class path, which surefire lets the module read ({@code --add-reads
 * io.kvtier.model.llama=ALL-UNNAMED}); the unnamed module is open, so the reflection in
 * {@link #promptIds} needs no {@code --add-opens}.
 */
final class LlamaCpp implements AutoCloseable {
  /** A logit bias that no logit of the test models overcomes. */
  private static final float BANNED_BIAS = -1e4f;

  private final de.kherud.llama.LlamaModel model;

  private LlamaCpp(de.kherud.llama.LlamaModel model) {
    this.model = model;
  }

  /** Loads {@code gguf} on the CPU with {@code threads} threads for prefill and decode alike. */
  static LlamaCpp open(Path gguf, int threads, int context) {
    de.kherud.llama.LlamaModel.setLogger(LogFormat.TEXT, (level, message) -> {});
    return new LlamaCpp(
        new de.kherud.llama.LlamaModel(
            new ModelParameters()
                .setModel(gguf.toString())
                .setThreads(threads)
                .setThreadsBatch(threads)
                .setCtxSize(context)
                .setParallel(1)
                .setGpuLayers(0)
                .disableLog()));
  }

  /**
   * The pieces of {@code count} greedy tokens after {@code prompt} (temperature 0, no penalties;
   * with {@code ignoreEos} llama.cpp masks end-of-generation tokens and does not stop).
   */
  List<String> greedyPieces(int[] prompt, int count, boolean ignoreEos) {
    return greedyPieces(prompt, count, ignoreEos, Set.of());
  }

  /** As {@link #greedyPieces(int[], int, boolean)}, never choosing the ids in {@code banned}. */
  List<String> greedyPieces(int[] prompt, int count, boolean ignoreEos, Set<Integer> banned) {
    InferenceParameters params =
        new InferenceParameters("")
            .setTemperature(0f)
            .setNPredict(count)
            .setRepeatPenalty(1f)
            .setFrequencyPenalty(0f)
            .setPresencePenalty(0f)
            .setIgnoreEos(ignoreEos)
            .setCachePrompt(false)
            .setSeed(1);
    if (!banned.isEmpty()) {
      params.setTokenIdBias(banned.stream().collect(Collectors.toMap(id -> id, id -> BANNED_BIAS)));
    }
    promptIds(params, prompt);
    List<String> pieces = new ArrayList<>();
    for (LlamaOutput output : model.generate(params)) {
      pieces.add(output.text);
    }
    // the stop arrives as one more output with no text
    if (!pieces.isEmpty() && pieces.getLast().isEmpty()) {
      pieces.removeLast();
    }
    return pieces;
  }

  /** The text llama.cpp renders for token {@code id}. */
  String piece(int id) {
    return model.decode(new int[] {id});
  }

  /**
   * Sets the request's prompt to a JSON array of ids. The binding's setter takes text only (and
   * its tokenizer would add BOS), so the JSON field it serializes is written directly.
   */
  @SuppressWarnings("unchecked")
  static void promptIds(InferenceParameters params, int[] prompt) {
    try {
      Field field = params.getClass().getSuperclass().getDeclaredField("parameters");
      field.setAccessible(true);
      ((Map<String, String>) field.get(params))
          .put(
              "prompt",
              Arrays.stream(prompt)
                  .mapToObj(Integer::toString)
                  .collect(Collectors.joining(",", "[", "]")));
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "de.kherud:llama changed: InferenceParameters has no 'parameters' map to put the prompt"
              + " ids in",
          e);
    }
  }

  @Override
  public void close() {
    model.close();
  }
}
