package io.kvtier.serving;

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
  static List<Prompt> sharedPrefixes(
      Random random,
      int requests,
      int groups,
      int vocab,
      int[] prefixLength,
      int[] suffixLength,
      int[] maxTokens) {
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

  /**
   * Wraps a request stream so that some prefixes are certain to come back only after they have
   * left the device and the host: {@code cold} prefixes of their own first (each sent twice),
   * then the stream, then unique prompts of {@code flushTokens} tokens in all (more than the
   * device and host pools hold, so LRU pushes out everything older, the cold prompts first), then
   * each cold prefix again with a new tail. A random stream alone guarantees no such revisit:
   * with some seeds every group that leaves the host never comes back.
   *
   * @param random the seeded source of the added prompts
   * @param stream the requests in between
   * @param cold how many prefixes to revisit
   * @param prefixTokens the length of each such prefix
   * @param flushTokens at least this many tokens of unique prompts before the revisits
   * @param vocab token ids are below it
   * @return the requests, in arrival order
   */
  static List<Prompt> withColdRevisits(
      Random random, List<Prompt> stream, int cold, int prefixTokens, int flushTokens, int vocab) {
    int[][] prefixes = new int[cold][];
    List<Prompt> out = new ArrayList<>(stream.size() + 3 * cold + flushTokens / 96 + 1);
    for (int c = 0; c < cold; c++) {
      prefixes[c] = tokens(random, prefixTokens, vocab);
      // Twice, with different tails: selective write-through backs a node up to the host only
      // at its second hit (the default threshold), and only pages on the host reach L3.
      for (int visit = 0; visit < 2; visit++) {
        out.add(new Prompt(concat(prefixes[c], tokens(random, 1 + random.nextInt(8), vocab)), 2));
      }
    }
    out.addAll(stream);
    for (int flushed = 0; flushed < flushTokens; flushed += 96) {
      out.add(new Prompt(tokens(random, 96, vocab), 1));
    }
    for (int c = 0; c < cold; c++) {
      out.add(new Prompt(concat(prefixes[c], tokens(random, 1 + random.nextInt(8), vocab)), 2));
    }
    return out;
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
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
