package io.kvtier.serving;

import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;

/**
 * A rank's model runner, counting the request steps it ran: each call that advanced a request (a
 * prefill chunk or a decode token, or the first token of a fully cached prompt) counts once. The
 * engine's stats read it after each tick: how many requests one tick batched.
 */
final class StepCounter implements ModelRunner {
  private final ModelRunner model;
  private long steps;

  StepCounter(ModelRunner model) {
    this.model = model;
  }

  /** The steps run so far. */
  long steps() {
    return steps;
  }

  @Override
  public int layers() {
    return model.layers();
  }

  @Override
  public void writeLayer(ModelStep step, int layer) {
    if (layer == 0 && step.to() > step.from()) {
      steps++;
    }
    model.writeLayer(step, layer);
  }

  @Override
  public int nextToken(ModelStep step) {
    if (step.to() == step.from()) {
      steps++;
    }
    return model.nextToken(step);
  }

  @Override
  public int speculativeTokens() {
    return model.speculativeTokens();
  }

  @Override
  public void propose(ModelStep step, int count, int[] proposals) {
    model.propose(step, count, proposals);
  }

  /** A verification pass counts once, at its layer 0 ({@link #writeLayer}). */
  @Override
  public void verifyTokens(ModelStep step, int[] tokens) {
    model.verifyTokens(step, tokens);
  }

  @Override
  public boolean samples() {
    return model.samples();
  }

  @Override
  public boolean reportsLogprobs() {
    return model.reportsLogprobs();
  }

  @Override
  public boolean reportsPromptLogprobs() {
    return model.reportsPromptLogprobs();
  }

  @Override
  public void recordPromptLogprobs(ModelStep step) {
    model.recordPromptLogprobs(step);
  }

  @Override
  public boolean batchesDecode() {
    return model.batchesDecode();
  }

  @Override
  public void writeDecodeLayer(java.util.List<ModelStep> batch, int layer) {
    if (layer == 0) {
      steps += batch.size();
    }
    model.writeDecodeLayer(batch, layer);
  }

  @Override
  public void nextDecodeTokens(java.util.List<ModelStep> batch, int[] tokens) {
    model.nextDecodeTokens(batch, tokens);
  }

  @Override
  public int verifyPrefix(ModelStep step) {
    return model.verifyPrefix(step);
  }

  @Override
  public int snapshotSlots() {
    return model.snapshotSlots();
  }

  @Override
  public int streamedBlock(int layer) {
    return model.streamedBlock(layer);
  }

  @Override
  public int pageBlocks() {
    return model.pageBlocks();
  }

  @Override
  public void released(long requestId) {
    model.released(requestId);
  }
}
