/**
 * Small programs that embed kvtier: the README's example, a server's request path and several
 * ranks as threads on the serving engine, a model of one's own served by it, and one program
 * whose backends come from the module path and the configuration. They name no backend class.
 */
module io.kvtier.examples {
  requires io.kvtier.core;
  // ServerLoopExample, RanksAsThreadsExample and OwnModelExample: the serving engine.
  requires io.kvtier.serving;

  exports io.kvtier.examples;
}
