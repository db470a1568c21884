package io.kvtier.simulator.workload;

/**
 * The two fixed traces of WORKLOADS.md that the radix-tree benchmarks replay, generated bit for bit
 * as specified (their JSONL files have the SHA-256 values of the specification's table).
 */
public final class FixedTraces {

  /** The base seed of the fixed traces; each trace draws from {@code BASE_SEED + its index}. */
  public static final long BASE_SEED = 20250101L;

  /** The vocabulary size the fixed traces draw tokens from. */
  public static final int VOCAB = 32000;

  /** The request count of {@link #sharedPrefix()}; a constant for JMH annotations. */
  public static final int SHARED_PREFIX_REQUESTS = 1024;

  /** The request count of {@link #multiturn()}; a constant for JMH annotations. */
  public static final int MULTITURN_REQUESTS = 640;

  private static final int SP_GROUPS = 64;
  private static final int SP_QUESTIONS = 16;
  private static final int SP_SYSTEM = 2048;
  private static final int SP_QUESTION = 128;

  private static final int MT_CONVERSATIONS = 128;
  private static final int MT_TURNS = 5;
  private static final int MT_FIRST = 512;
  private static final int MT_ANSWER = 64;
  private static final int MT_QUESTION = 128;

  private FixedTraces() {}

  /**
   * The trace of a fixed name.
   *
   * @param name {@code shared-prefix} or {@code multiturn}
   * @return the trace
   */
  public static Trace byName(String name) {
    return switch (name) {
      case "shared-prefix" -> sharedPrefix();
      case "multiturn" -> multiturn();
      case null -> throw new NullPointerException("name");
      default ->
          throw new IllegalArgumentException(
              "unknown fixed trace '" + name + "': the fixed traces are shared-prefix, multiturn");
    };
  }

  /**
   * The "shared-prefix" trace: 64 groups x 16 questions, each prompt a 2048-token system prompt of
   * its group followed by a 128-token question, in a shuffled order; 1024 requests, 2,228,224
   * tokens.
   *
   * @return a new trace
   */
  public static Trace sharedPrefix() {
    SplitMix64 rng = new SplitMix64(BASE_SEED);
    int[][] system = new int[SP_GROUPS][];
    for (int g = 0; g < SP_GROUPS; g++) {
      system[g] = rng.tokens(SP_SYSTEM, VOCAB);
    }
    int[][] question = new int[SP_GROUPS * SP_QUESTIONS][];
    for (int id = 0; id < question.length; id++) {
      question[id] = rng.tokens(SP_QUESTION, VOCAB);
    }
    int[] order = identity(SP_GROUPS * SP_QUESTIONS);
    rng.shuffle(order);

    int promptLength = SP_SYSTEM + SP_QUESTION;
    Trace.Builder trace = Trace.builder(order.length, (long) order.length * promptLength);
    int[] prompt = new int[promptLength];
    for (int id : order) {
      System.arraycopy(system[id / SP_QUESTIONS], 0, prompt, 0, SP_SYSTEM);
      System.arraycopy(question[id], 0, prompt, SP_SYSTEM, SP_QUESTION);
      trace.add(prompt, 0, promptLength);
    }
    return trace.build();
  }

  /**
   * The "multiturn" trace: 128 conversations x 5 turns, each turn's prompt the previous one
   * followed by a 64-token answer and a 128-token question; one shuffled round per turn; 640
   * requests, 573,440 tokens.
   *
   * @return a new trace
   */
  public static Trace multiturn() {
    SplitMix64 rng = new SplitMix64(BASE_SEED + 1);
    int turnGrowth = MT_ANSWER + MT_QUESTION;
    int finalLength = MT_FIRST + (MT_TURNS - 1) * turnGrowth;
    // Turn t's prompt is the first MT_FIRST + t * turnGrowth tokens of the conversation's full
    // text, so one array per conversation holds all of its prompts.
    int[][] conversation = new int[MT_CONVERSATIONS][finalLength];
    for (int c = 0; c < MT_CONVERSATIONS; c++) {
      rng.fillTokens(conversation[c], 0, MT_FIRST, VOCAB);
    }
    for (int t = 1; t < MT_TURNS; t++) {
      int start = MT_FIRST + (t - 1) * turnGrowth;
      for (int c = 0; c < MT_CONVERSATIONS; c++) {
        rng.fillTokens(conversation[c], start, MT_ANSWER, VOCAB);
        rng.fillTokens(conversation[c], start + MT_ANSWER, MT_QUESTION, VOCAB);
      }
    }

    long totalTokens = 0;
    for (int t = 0; t < MT_TURNS; t++) {
      totalTokens += (long) MT_CONVERSATIONS * (MT_FIRST + t * turnGrowth);
    }
    Trace.Builder trace = Trace.builder(MT_CONVERSATIONS * MT_TURNS, totalTokens);
    for (int t = 0; t < MT_TURNS; t++) {
      int[] order = identity(MT_CONVERSATIONS);
      rng.shuffle(order);
      for (int c : order) {
        trace.add(conversation[c], 0, MT_FIRST + t * turnGrowth);
      }
    }
    return trace.build();
  }

  private static int[] identity(int n) {
    int[] a = new int[n];
    for (int i = 0; i < n; i++) {
      a[i] = i;
    }
    return a;
  }
}
