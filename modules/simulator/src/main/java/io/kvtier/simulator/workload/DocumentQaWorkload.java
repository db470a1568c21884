package io.kvtier.simulator.workload;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Long-document question answering: {@code documents} documents of {@code documentTokens} tokens,
 * each asked {@code asks} times, each ask the document followed by a fresh question. The documents
 * share one body and differ only in their first token, the document's index: a radix tree shares
 * nothing between them, while a cache that hashed pages without their prefix would wrongly
 * conflate them. Spec name {@code doc-qa}, keys {@code documents, length, asks, question, output,
 * order, rate, seed, vocab}.
 *
 * @param documents number of documents, at least 1 and at most {@code vocab}
 * @param documentTokens document length including the leading id, at least 1
 * @param asks how many times each document is asked, at least 1
 * @param questionTokens question length, at least 0
 * @param outputTokens max output tokens of each request, at least 0
 * @param order the order of the asks
 * @param rate Poisson arrival rate in requests per second, at least 0 (0: all arrive at time 0)
 * @param seed the generator seed
 * @param vocab vocabulary size, at least 1
 */
public record DocumentQaWorkload(
    int documents,
    int documentTokens,
    int asks,
    int questionTokens,
    int outputTokens,
    Order order,
    double rate,
    long seed,
    int vocab)
    implements Workload {

  /** The order of the asks. */
  public enum Order {
    /** A random permutation of all asks. */
    RANDOM,
    /** All documents once, then all again: 0 1 2 0 1 2 (the hardest for LRU). */
    TILE,
    /** Each document's asks back to back: 0 0 1 1 2 2. */
    INTERLEAVE
  }

  /** The spec name. */
  public static final String NAME = "doc-qa";

  static final List<String> KEYS =
      List.of(
          "documents", "length", "asks", "question", "output", "order", "rate", "seed", "vocab");

  /** The defaults of WORKLOADS.md: 8 documents of 20000 tokens, each asked twice. */
  public static final DocumentQaWorkload DEFAULTS =
      new DocumentQaWorkload(8, 20000, 2, 16, 32, Order.RANDOM, 0, FixedTraces.BASE_SEED, 32000);

  /** Validates the fields. */
  public DocumentQaWorkload {
    Objects.requireNonNull(order, "order");
    Check.atLeast("documents", documents, 1);
    Check.atLeast("length", documentTokens, 1);
    Check.atLeast("asks", asks, 1);
    Check.atLeast("question", questionTokens, 0);
    Check.atLeast("output", outputTokens, 0);
    Check.finiteAtLeast("rate", rate, 0);
    Check.atLeast("vocab", vocab, 1);
    if (documents > vocab) {
      throw new IllegalArgumentException(
          "documents=%d must be <= vocab=%d: a document's id is its first token"
              .formatted(documents, vocab));
    }
    if ((long) documents * asks > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "documents=%d x asks=%d is more than %d requests"
              .formatted(documents, asks, Integer.MAX_VALUE));
    }
    if ((long) documentTokens + questionTokens > Check.MAX_PROMPT) {
      throw new IllegalArgumentException(
          "length=%d + question=%d is more than %d tokens"
              .formatted(documentTokens, questionTokens, Check.MAX_PROMPT));
    }
  }

  static DocumentQaWorkload parse(String params) {
    SpecParameters p = SpecParameters.parse(NAME, params, KEYS);
    DocumentQaWorkload d = DEFAULTS;
    return new DocumentQaWorkload(
        p.intValue("documents", d.documents, 1),
        p.intValue("length", d.documentTokens, 1),
        p.intValue("asks", d.asks, 1),
        p.intValue("question", d.questionTokens, 0),
        p.intValue("output", d.outputTokens, 0),
        p.enumValue("order", d.order),
        p.doubleValue("rate", d.rate, 0),
        p.longValue("seed", d.seed),
        p.intValue("vocab", d.vocab, 1));
  }

  @Override
  public String spec() {
    return ("%s:documents=%d,length=%d,asks=%d,question=%d,output=%d,order=%s,rate=%s,seed=%d,"
            + "vocab=%d")
        .formatted(
            NAME,
            documents,
            documentTokens,
            asks,
            questionTokens,
            outputTokens,
            order.name().toLowerCase(Locale.ROOT),
            rate,
            seed,
            vocab);
  }

  /** The document asked by each request, in request order. */
  int[] askOrder(SplitMix64 rng) {
    int[] docs = new int[documents * asks];
    for (int i = 0; i < docs.length; i++) {
      docs[i] = order == Order.INTERLEAVE ? i / asks : i % documents;
    }
    if (order == Order.RANDOM) {
      rng.shuffle(docs);
    }
    return docs;
  }

  /**
   * The requests. The shared body and the questions come from one forked stream, the order and
   * the arrival gaps from two others.
   */
  @Override
  public Stream<Request> requests() {
    SplitMix64 root = new SplitMix64(seed);
    SplitMix64 tokens = root.fork();
    int[] docs = askOrder(root.fork());
    PoissonArrivals arrivals = new PoissonArrivals(rate, root.fork());
    int[] body = tokens.tokens(documentTokens - 1, vocab);
    return RequestStreams.sequential(
        docs.length,
        i -> {
          int d = docs[i];
          int[] prompt = new int[documentTokens + questionTokens];
          prompt[0] = d;
          System.arraycopy(body, 0, prompt, 1, body.length);
          tokens.fillTokens(prompt, documentTokens, questionTokens, vocab);
          return new Request(arrivals.next(), prompt, outputTokens, Optional.of("document-" + d));
        });
  }
}
