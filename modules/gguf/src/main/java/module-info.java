/**
 * GGUF model files and their tokenizers: a reader that maps a file (versions 1 to 3) and reads
 * tensors in place, a writer (versions 2 and 3), the model hyperparameters of the supported
 * architectures, a writer of random-weight {@code llama} files at real models' shapes, and the SentencePiece and byte-level BPE tokenizers described by a file's
 * {@code tokenizer.ggml.*} metadata. A leaf library: it depends on nothing of kvtier's.
 */
module io.kvtier.gguf {
  exports io.kvtier.gguf;
  exports io.kvtier.gguf.tokenizer;
}
