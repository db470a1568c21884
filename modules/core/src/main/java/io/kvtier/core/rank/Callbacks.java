package io.kvtier.core.rank;

import io.kvtier.core.cache.CacheSchedule;

/**
 * The engine's calls into its user's code from inside a step, the model's and the request
 * listener's, each made in a callback of the cache's schedule ({@link
 * CacheSchedule#enterCallback()}): a replicated mutator of the cache that such code calls is
 * refused, on every rank alike, instead of changing one rank's replica under the running step.
 */
final class Callbacks {
  private Callbacks() {}

  /**
   * The model, every call of it made in a callback.
   *
   * @param model the user's model
   * @param schedule the cache's schedule
   * @return the model as the scheduler calls it
   */
  static ModelRunner model(ModelRunner model, CacheSchedule schedule) {
    return new GuardedModel(model, schedule);
  }

  /**
   * The listener, every call of it made in a callback; {@link RequestListener#NONE} as it is.
   *
   * @param listener the user's listener
   * @param schedule the cache's schedule
   * @return the listener as the scheduler calls it
   */
  static RequestListener listener(RequestListener listener, CacheSchedule schedule) {
    return listener == RequestListener.NONE ? listener : new GuardedListener(listener, schedule);
  }

  private record GuardedModel(ModelRunner model, CacheSchedule schedule) implements ModelRunner {
    @Override
    public int layers() {
      schedule.enterCallback();
      try {
        return model.layers();
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void writeLayer(ModelStep step, int layer) {
      schedule.enterCallback();
      try {
        model.writeLayer(step, layer);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public int nextToken(ModelStep step) {
      schedule.enterCallback();
      try {
        return model.nextToken(step);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public int speculativeTokens() {
      schedule.enterCallback();
      try {
        return model.speculativeTokens();
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void propose(ModelStep step, int count, int[] proposals) {
      schedule.enterCallback();
      try {
        model.propose(step, count, proposals);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void verifyTokens(ModelStep step, int[] tokens) {
      schedule.enterCallback();
      try {
        model.verifyTokens(step, tokens);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public boolean samples() {
      schedule.enterCallback();
      try {
        return model.samples();
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public boolean reportsLogprobs() {
      schedule.enterCallback();
      try {
        return model.reportsLogprobs();
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public boolean reportsPromptLogprobs() {
      schedule.enterCallback();
      try {
        return model.reportsPromptLogprobs();
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void recordPromptLogprobs(ModelStep step) {
      schedule.enterCallback();
      try {
        model.recordPromptLogprobs(step);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public boolean batchesDecode() {
      schedule.enterCallback();
      try {
        return model.batchesDecode();
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void writeDecodeLayer(java.util.List<ModelStep> steps, int layer) {
      schedule.enterCallback();
      try {
        model.writeDecodeLayer(steps, layer);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void nextDecodeTokens(java.util.List<ModelStep> steps, int[] tokens) {
      schedule.enterCallback();
      try {
        model.nextDecodeTokens(steps, tokens);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public int verifyPrefix(ModelStep step) {
      schedule.enterCallback();
      try {
        return model.verifyPrefix(step);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public int snapshotSlots() {
      schedule.enterCallback();
      try {
        return model.snapshotSlots();
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public int streamedBlock(int layer) {
      schedule.enterCallback();
      try {
        return model.streamedBlock(layer);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public int pageBlocks() {
      schedule.enterCallback();
      try {
        return model.pageBlocks();
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void released(long requestId) {
      schedule.enterCallback();
      try {
        model.released(requestId);
      } finally {
        schedule.exitCallback();
      }
    }
  }

  private record GuardedListener(RequestListener listener, CacheSchedule schedule)
      implements RequestListener {
    @Override
    public void arrived(long tick, long id, int promptTokens) {
      schedule.enterCallback();
      try {
        listener.arrived(tick, id, promptTokens);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void admitted(long tick, long id, int deviceHitTokens, int hostHitTokens) {
      schedule.enterCallback();
      try {
        listener.admitted(tick, id, deviceHitTokens, hostHitTokens);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void admitted(
        long tick, long id, int deviceHitTokens, int hostHitTokens, int l3HitTokens) {
      schedule.enterCallback();
      try {
        listener.admitted(tick, id, deviceHitTokens, hostHitTokens, l3HitTokens);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void admitted(
        long tick,
        long id,
        int deviceHitTokens,
        int hostHitTokens,
        int l3HitTokens,
        int usableTokens) {
      schedule.enterCallback();
      try {
        listener.admitted(tick, id, deviceHitTokens, hostHitTokens, l3HitTokens, usableTokens);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void promptLogprobs(long tick, long id, java.util.List<TokenLogprob> logprobs) {
      schedule.enterCallback();
      try {
        listener.promptLogprobs(tick, id, logprobs);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void token(long tick, long id, int token, TokenLogprob logprob) {
      schedule.enterCallback();
      try {
        listener.token(tick, id, token, logprob);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void prefilled(long tick, long id) {
      schedule.enterCallback();
      try {
        listener.prefilled(tick, id);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void rejected(long tick, long id, String reason) {
      schedule.enterCallback();
      try {
        listener.rejected(tick, id, reason);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void requeued(long tick, long id, int lostTokens) {
      schedule.enterCallback();
      try {
        listener.requeued(tick, id, lostTokens);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void awaited(
        long tick, long id, int pagesExpected, int pagesFetched, int pagesRecomputed) {
      schedule.enterCallback();
      try {
        listener.awaited(tick, id, pagesExpected, pagesFetched, pagesRecomputed);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void published(long tick, long id, int pagesPublished) {
      schedule.enterCallback();
      try {
        listener.published(tick, id, pagesPublished);
      } finally {
        schedule.exitCallback();
      }
    }

    @Override
    public void ended(long tick, long id, RequestOutcome outcome) {
      schedule.enterCallback();
      try {
        listener.ended(tick, id, outcome);
      } finally {
        schedule.exitCallback();
      }
    }
  }
}
