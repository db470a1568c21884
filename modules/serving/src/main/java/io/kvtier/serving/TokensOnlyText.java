package io.kvtier.serving;

import java.util.List;
import java.util.Objects;
import java.util.Set;

/** The text of a model without a tokenizer (see {@link ModelText#tokensOnly}). */
record TokensOnlyText(String name) implements ModelText {

  TokensOnlyText {
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("the model's name is blank: give one");
    }
  }

  @Override
  public int[] encode(String text) {
    throw new TextUnavailableException(
        "model "
            + name
            + " has no tokenizer, so a text prompt cannot be encoded: send the prompt as an array"
            + " of token ids");
  }

  @Override
  public int[] chat(List<Message> messages) {
    throw new TextUnavailableException(
        "model "
            + name
            + " has no tokenizer or chat template, so it cannot take chat messages: use"
            + " /v1/completions with the prompt as an array of token ids");
  }

  @Override
  public Decoder decoder(int[] prompt, boolean reply) {
    return new Decoder() {
      @Override
      public String add(int token) {
        return "";
      }

      @Override
      public String finish() {
        return "";
      }
    };
  }

  @Override
  public Set<Integer> endOfGeneration() {
    return Set.of();
  }
}
