/**
 * The tiny transformer: a deterministic decoder-only model in plain Java (full, sliding-window
 * and recurrent layers), served by the serving engine as {@code tiny}.
 */
module io.kvtier.model.tiny {
  requires transitive io.kvtier.serving;

  exports io.kvtier.model.tiny;

  provides io.kvtier.serving.ModelProvider with
      io.kvtier.model.tiny.TinyModelProvider;
}
