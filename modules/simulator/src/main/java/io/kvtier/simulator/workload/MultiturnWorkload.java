package io.kvtier.simulator.workload;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Multi-turn chat: each conversation's first prompt has {@code firstTokens} tokens, and each later
 * turn's prompt is the previous one followed by the previous answer ({@code answerTokens}) and a
 * new question ({@code questionTokens}), so every turn extends the previous turn of its
 * conversation. Requests arrive as a Poisson process; at each arrival one of the ready
 * conversations (turns left, and at least {@code thinkMillis} since its previous turn arrived)
 * sends its next turn, chosen at random or first-ready-first. If none is ready the arrival waits
 * for the first that is. Spec name {@code multiturn}, keys {@code conversations, turns, first,
 * answer, question, rate, think, order, seed, vocab}.
 *
 * @param conversations number of conversations, at least 1
 * @param turns turns per conversation, at least 1
 * @param firstTokens first prompt length, at least 1
 * @param answerTokens answer length, also each request's max output tokens, at least 0
 * @param questionTokens length of each later question, at least 0
 * @param rate Poisson arrival rate in requests per second, at least 0 (0: as early as possible)
 * @param thinkMillis least time between two turns of one conversation, at least 0
 * @param order how the next conversation is chosen among the ready ones
 * @param seed the generator seed
 * @param vocab vocabulary size, at least 1
 */
public record MultiturnWorkload(
    int conversations,
    int turns,
    int firstTokens,
    int answerTokens,
    int questionTokens,
    double rate,
    long thinkMillis,
    Order order,
    long seed,
    int vocab)
    implements Workload {

  /** How the next turn's conversation is chosen among the ready ones. */
  public enum Order {
    /** Uniformly at random. */
    RANDOM,
    /** The one that has been ready longest; with {@code think=0} this is round-robin. */
    FIFO
  }

  /** The spec name. */
  public static final String NAME = "multiturn";

  static final List<String> KEYS =
      List.of(
          "conversations",
          "turns",
          "first",
          "answer",
          "question",
          "rate",
          "think",
          "order",
          "seed",
          "vocab");

  /** The defaults of WORKLOADS.md: 128 conversations, 5 turns, 512 + 4 x (64 + 128) tokens. */
  public static final MultiturnWorkload DEFAULTS =
      new MultiturnWorkload(128, 5, 512, 64, 128, 0, 0, Order.RANDOM, FixedTraces.BASE_SEED, 32000);

  /** Validates the fields. */
  public MultiturnWorkload {
    Objects.requireNonNull(order, "order");
    Check.atLeast("conversations", conversations, 1);
    Check.atLeast("turns", turns, 1);
    Check.atLeast("first", firstTokens, 1);
    Check.atLeast("answer", answerTokens, 0);
    Check.atLeast("question", questionTokens, 0);
    Check.finiteAtLeast("rate", rate, 0);
    Check.atLeast("think", thinkMillis, 0);
    Check.atLeast("vocab", vocab, 1);
    if ((long) conversations * turns > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "conversations=%d x turns=%d is more than %d requests"
              .formatted(conversations, turns, Integer.MAX_VALUE));
    }
    long last = firstTokens + (turns - 1L) * ((long) answerTokens + questionTokens);
    if (last > Check.MAX_PROMPT) {
      throw new IllegalArgumentException(
          ("the last turn's prompt would have %d tokens, more than %d: lower turns, first, answer"
                  + " or question")
              .formatted(last, Check.MAX_PROMPT));
    }
  }

  static MultiturnWorkload parse(String params) {
    SpecParameters p = SpecParameters.parse(NAME, params, KEYS);
    MultiturnWorkload d = DEFAULTS;
    return new MultiturnWorkload(
        p.intValue("conversations", d.conversations, 1),
        p.intValue("turns", d.turns, 1),
        p.intValue("first", d.firstTokens, 1),
        p.intValue("answer", d.answerTokens, 0),
        p.intValue("question", d.questionTokens, 0),
        p.doubleValue("rate", d.rate, 0),
        p.longValue("think", d.thinkMillis),
        p.enumValue("order", d.order),
        p.longValue("seed", d.seed),
        p.intValue("vocab", d.vocab, 1));
  }

  @Override
  public String spec() {
    return ("%s:conversations=%d,turns=%d,first=%d,answer=%d,question=%d,rate=%s,think=%d,"
            + "order=%s,seed=%d,vocab=%d")
        .formatted(
            NAME,
            conversations,
            turns,
            firstTokens,
            answerTokens,
            questionTokens,
            rate,
            thinkMillis,
            order.name().toLowerCase(Locale.ROOT),
            seed,
            vocab);
  }

  /** The length of the prompt of one turn. */
  int promptLength(int turn) {
    return firstTokens + turn * (answerTokens + questionTokens);
  }

  /**
   * The requests. Conversation texts are drawn first from one forked stream (conversation by
   * conversation), the choices and the arrival gaps from two others, so neither {@code order},
   * {@code rate} nor {@code think} changes any conversation's text.
   */
  @Override
  public Stream<Request> requests() {
    SplitMix64 root = new SplitMix64(seed);
    SplitMix64 tokens = root.fork();
    SplitMix64 choices = root.fork();
    PoissonArrivals arrivals = new PoissonArrivals(rate, root.fork());
    // turn t's prompt is a prefix of the conversation's full text
    int[][] text = new int[conversations][];
    for (int c = 0; c < conversations; c++) {
      text[c] = tokens.tokens(promptLength(turns - 1), vocab);
    }
    int[] nextTurn = new int[conversations];
    long[] readyAt = new long[conversations];
    // Conversations with turns left, ordered by readyAt: a turn's arrival time is never below the
    // previous one's, and think is constant, so appending keeps the list sorted.
    List<Integer> queue = new ArrayList<>(conversations);
    for (int c = 0; c < conversations; c++) {
      queue.add(c);
    }
    long[] clock = {0};
    return RequestStreams.sequential(
        conversations * turns,
        i -> {
          long now = Math.max(clock[0], Math.max(arrivals.next(), readyAt[queue.getFirst()]));
          clock[0] = now;
          int pick = 0;
          if (order == Order.RANDOM) {
            int ready = 1;
            while (ready < queue.size() && readyAt[queue.get(ready)] <= now) {
              ready++;
            }
            pick = choices.nextInt(ready);
          }
          int c = queue.remove(pick);
          int turn = nextTurn[c]++;
          if (nextTurn[c] < turns) {
            readyAt[c] = now + thinkMillis;
            queue.add(c);
          }
          int[] prompt = Arrays.copyOf(text[c], promptLength(turn));
          return new Request(now, prompt, answerTokens, Optional.of("conversation-" + c));
        });
  }
}
