package io.kvtier.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvtier.core.rank.MinTokens;
import io.kvtier.core.rank.Sampling;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * What ends a choice, as both endpoints take it ({@link ChoiceText} applies it): the model's end
 * tokens unless {@code ignoreEos}, the stop sequences, the stop token ids, none of them before
 * {@code minTokens}, and whether a stop sequence stays in the text.
 *
 * @param stops the stop sequences ({@code stop}): the text ends before the first one, or after it
 *     with {@code includeStopStr}
 * @param stopTokenIds vLLM's {@code stop_token_ids}: tokens that end a choice as the model's end
 *     tokens do (whatever {@code ignoreEos}), their own text kept (a special token has none)
 * @param minTokens vLLM's {@code min_tokens}: the tokens a choice generates before anything ends
 *     it; until then the end tokens and {@code stopTokenIds} are never chosen ({@link
 *     Sampling#minTokens()}) and no stop sequence is looked for; 0 for none
 * @param ignoreEos vLLM's {@code ignore_eos}: the model's end-of-generation (or end-of-reply)
 *     tokens end nothing and add no text, so the choice runs to its budget or a stop sequence (how
 *     benchmark clients ask for answers of a set length)
 * @param includeStopStr vLLM's {@code include_stop_str_in_output}: the stop sequence that ended
 *     the text stays at its end
 */
public record StopRules(
    List<String> stops,
    Set<Integer> stopTokenIds,
    int minTokens,
    boolean ignoreEos,
    boolean includeStopStr) {

  /** Nothing but the model's end tokens ends a choice. */
  public static final StopRules NONE = new StopRules(List.of(), Set.of(), 0, false, false);

  /** The most {@code stop_token_ids} one request may send. */
  static final int MAX_STOP_TOKEN_IDS = 1024;

  /** Validates and copies the fields. */
  public StopRules {
    stops = List.copyOf(stops);
    stopTokenIds = Set.copyOf(stopTokenIds);
    if (minTokens < 0) {
      throw new IllegalArgumentException("minTokens=" + minTokens + " must be at least 0");
    }
  }

  /**
   * The fields of a body, either endpoint's: {@code stop}, {@code stop_token_ids} (an array of
   * token ids, at most {@value #MAX_STOP_TOKEN_IDS}; {@link CompletionRequest#check} checks them
   * against the vocabulary), {@code min_tokens} (at least 0; the check holds it to the budget),
   * {@code ignore_eos} and {@code include_stop_str_in_output} (false unless sent).
   *
   * @throws ApiException a 400 naming the field
   */
  static StopRules parse(BodyFields f) {
    int min = f.integer("min_tokens").orElse(0);
    if (min < 0) {
      throw ApiException.badField(
          "min_tokens", "min_tokens=" + min + " must be at least 0 (0, the default, is none)");
    }
    return new StopRules(
        f.stops(),
        stopTokenIds(f),
        min,
        f.bool("ignore_eos").orElse(false),
        f.bool("include_stop_str_in_output").orElse(false));
  }

  private static Set<Integer> stopTokenIds(BodyFields f) {
    Optional<JsonNode> given = f.get("stop_token_ids");
    if (given.isEmpty()) {
      return Set.of();
    }
    JsonNode node = given.get();
    if (!node.isArray()) {
      throw ApiException.badField(
          "stop_token_ids",
          "stop_token_ids must be an array of token ids, like [2], not "
              + BodyFields.describe(node));
    }
    if (node.size() > MAX_STOP_TOKEN_IDS) {
      throw ApiException.badField(
          "stop_token_ids",
          "stop_token_ids has " + node.size() + " ids: give at most " + MAX_STOP_TOKEN_IDS);
    }
    Set<Integer> ids = new TreeSet<>();
    for (int i = 0; i < node.size(); i++) {
      String param = "stop_token_ids[" + i + "]";
      int id = BodyFields.integer(node.get(i), param);
      if (id < 0) {
        throw ApiException.badField(
            param, param + "=" + id + " is not a token id: give a non-negative integer");
      }
      ids.add(id);
    }
    return ids;
  }

  /**
   * The sampling that holds back, for the first {@code minTokens} tokens of a choice, every token
   * that would end it: the stop token ids, and the model's end tokens unless {@code ignoreEos}
   * makes them end nothing (vLLM's min-tokens processor bans the same).
   *
   * @param sampling the request's sampling
   * @param endTokens the model's end tokens of this endpoint
   * @return the sampling, with a {@link MinTokens}
   */
  Sampling holdBack(Sampling sampling, Set<Integer> endTokens) {
    Set<Integer> ending = new TreeSet<>(stopTokenIds);
    if (!ignoreEos) {
      ending.addAll(endTokens);
    }
    return sampling.withMinTokens(MinTokens.of(minTokens, ending));
  }
}
