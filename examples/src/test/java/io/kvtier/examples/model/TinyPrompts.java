package io.kvtier.examples.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Seeded request streams for the tiny transformer: groups of prompts that share a long prefix
 * (a system prompt, a document), revisited in random order so that a small cache evicts a
 * group's pages and meets them again later.
 */
final class TinyPrompts {
  private TinyPrompts() {}

  /** One request: a prompt and how many tokens to generate. */
  record Prompt(int[] tokens, int maxTokens) {}

  /**
   * Draws a request stream.
   *
   * @param random the seeded source
   * @param requests how many requests
   * @param groups how many shared prefixes
   * @param vocab token ids are below it
   * @param prefixLength the range of a shared prefix's length, {@code [min, max]}
   * @param suffixLength the range of a request's own tail, {@code [min, max]}
   * @param maxTokens the range of tokens to generate, {@code [min, max]}
   * @return the requests, in arrival order
   */
  static List<Prompt> sharedPrefixes(Random random, int requests, int groups, int vocab,
      int[] prefixLength, int[] suffixLength, int[] maxTokens) {
    int[][] prefixes = new int[groups][];
    for (int g = 0; g < groups; g++) {
      prefixes[g] = tokens(random, between(random, prefixLength), vocab);
    }
    List<Prompt> out = new ArrayList<>(requests);
    for (int i = 0; i < requests; i++) {
      // Skewed popularity: low groups come back often, high ones rarely, so some prefixes stay
      // hot on the device while others are evicted and must come back from the host.
      int g = (int) Math.min(groups - 1, Math.floor(groups * Math.pow(random.nextDouble(), 2)));
      int[] prefix = prefixes[g];
      // Sometimes only part of the prefix, so matches also end inside a tree node.
      int shared = random.nextInt(4) == 0 ? 1 + random.nextInt(prefix.length) : prefix.length;
      int[] suffix = tokens(random, between(random, suffixLength), vocab);
      int[] prompt = new int[shared + suffix.length];
      System.arraycopy(prefix, 0, prompt, 0, shared);
      System.arraycopy(suffix, 0, prompt, shared, suffix.length);
      if (random.nextInt(8) == 0 && !out.isEmpty()) {
        // An exact repeat of an earlier prompt: the whole prompt but its last token is cached.
        Prompt earlier = out.get(random.nextInt(out.size()));
        prompt = earlier.tokens().clone();
      }
      out.add(new Prompt(prompt, between(random, maxTokens)));
    }
    return out;
  }

  static int[] tokens(Random random, int length, int vocab) {
    int[] t = new int[length];
    for (int i = 0; i < length; i++) {
      t[i] = random.nextInt(vocab);
    }
    return t;
  }

  private static int between(Random random, int[] range) {
    return range[0] + random.nextInt(range[1] - range[0] + 1);
  }
}
