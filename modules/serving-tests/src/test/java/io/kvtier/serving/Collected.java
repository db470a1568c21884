package io.kvtier.serving;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A {@link GenerationEngine.TokenStream} that collects what the engine tells it and checks the
 * order the seam promises: at most one admission, then tokens, then exactly one end.
 */
class Collected implements GenerationEngine.TokenStream {
  final CompletableFuture<Completion> result = new CompletableFuture<>();
  final List<Integer> tokens = new ArrayList<>();
  volatile int cachedTokens = -1;
  private final List<String> violations = new ArrayList<>();
  private boolean admitted;
  private boolean ended;

  @Override
  public synchronized void admitted(int cached, int device, int host, int l3) {
    if (admitted || ended || !tokens.isEmpty()) {
      violations.add("admitted after " + (ended ? "the end" : admitted ? "admitted" : "tokens"));
    }
    // The usable part of the match: all of it, unless the layer mix cannot resume from it.
    if (cached < 0 || cached > device + host + l3) {
      violations.add("cached=" + cached + " not within 0.." + device + "+" + host + "+" + l3);
    }
    admitted = true;
    cachedTokens = cached;
  }

  @Override
  public synchronized void token(int token) {
    if (ended) {
      violations.add("token after the end");
    }
    tokens.add(token);
  }

  @Override
  public synchronized void finished(Completion completion) {
    end();
    int[] streamed = tokens.stream().mapToInt(Integer::intValue).toArray();
    if (!java.util.Arrays.equals(streamed, completion.tokens())) {
      violations.add("the completion's tokens differ from the streamed ones");
    }
    result.complete(completion);
  }

  @Override
  public synchronized void failed(Throwable cause) {
    end();
    result.completeExceptionally(cause);
  }

  private void end() {
    if (ended) {
      violations.add("a second end");
    }
    ended = true;
  }

  /** The completion, or the failure as thrown; fails if the order was broken. */
  Completion get() throws InterruptedException, ExecutionException, TimeoutException {
    Completion c = result.get(120, TimeUnit.SECONDS);
    synchronized (this) {
      if (!violations.isEmpty()) {
        throw new AssertionError("stream order broken: " + violations);
      }
    }
    return c;
  }

  /** Submits and waits. */
  static Completion generate(GenerationEngine engine, int[] prompt, int maxTokens)
      throws Exception {
    Collected c = new Collected();
    engine.submit(new GenerationEngine.GenerationRequest(prompt, maxTokens), c);
    return c.get();
  }
}
