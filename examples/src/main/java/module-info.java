/**
 * Small programs that embed kvtier: the README's example, one rank driven from a server loop,
 * several ranks as threads, and one program whose backends come from the module path and the
 * configuration. They name no backend class.
 */
module io.kvtier.examples {
  requires io.kvtier.core;

  exports io.kvtier.examples;
}
