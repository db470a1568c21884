/**
 * Llama-family transformers ({@code llama}, {@code qwen2}) run on the CPU from a GGUF file's
 * mapped weights: Vector API kernels whose per-position results do not depend on the batch, and
 * a forward pass over a {@link io.kvtier.model.llama.KvStore}.
 */
module io.kvtier.model.llama {
  requires transitive io.kvtier.gguf;
  requires jdk.incubator.vector;

  exports io.kvtier.model.llama;
}
