/** The {@code kvtier} command line and examples of embedding kvtier. */
module io.kvtier.examples {
  requires io.kvtier.core;
  requires info.picocli;

  exports io.kvtier.examples;

  opens io.kvtier.examples to
      info.picocli;
}
