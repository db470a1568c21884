/**
 * A GGUF file's text as a served model's {@link io.kvtier.serving.ModelText}: its tokenizer (from
 * {@code io.kvtier.gguf}), its BOS, EOS and end-of-generation rules, and its chat template
 * ({@code tokenizer.chat_template}, Hugging Face's Jinja) rendered by HubSpot's Jinjava.
 */
module io.kvtier.gguf.text {
  requires transitive io.kvtier.gguf;
  requires transitive io.kvtier.serving;
  // Jinjava's jar has no module descriptor: it is the automatic module "jinjava" (named after the
  // jar; it declares no Automatic-Module-Name). An automatic module cannot require the named
  // modules it uses, and a launcher that runs from the module path (bin/kvtier) resolves only
  // what is required, so the named modules Jinjava needs to render are required here for it.
  requires jinjava;
  requires com.fasterxml.jackson.databind;
  requires org.apache.commons.lang3;
  requires org.slf4j;
  // Jinjava's expression resolvers (PythonStringMethods is one) name java.beans types.
  requires java.desktop;

  exports io.kvtier.gguf.text;

  // Jinjava binds template functions (raise_exception) by reflection.
  opens io.kvtier.gguf.text to
      jinjava;
}
