/**
 * Llama-family transformers ({@code llama}, {@code qwen2}, {@code gemma2}, {@code gemma3}) run on
 * the CPU from a GGUF file's mapped weights: Vector API kernels whose per-position results do not
 * depend on the batch, a forward pass over a {@link io.kvtier.model.llama.KvStore} (a sliding
 * layer reading its window's rows only), and the serving engine's model
 * {@code gguf} ({@link io.kvtier.model.llama.GgufModelProvider}), whose KV lives in kvtier's
 * pages, split over the ranks of a tensor-parallel group.
 */
module io.kvtier.model.llama {
  requires transitive io.kvtier.gguf;
  requires transitive io.kvtier.serving;
  // The model's text: the file's tokenizer and chat template (ServingModel.text()).
  requires io.kvtier.gguf.text;
  requires jdk.incubator.vector;

  exports io.kvtier.model.llama;

  provides io.kvtier.serving.ModelProvider with
      io.kvtier.model.llama.GgufModelProvider;
}
