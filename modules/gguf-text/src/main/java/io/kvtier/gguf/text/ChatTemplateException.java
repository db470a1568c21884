package io.kvtier.gguf.text;

/**
 * A model's chat template cannot be rendered (a Jinja construct Jinjava lacks, a Python method
 * Java's strings do not have): a fault of the served model's setup, not of the request.
 */
public final class ChatTemplateException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what failed, where in the template, and what to do
   */
  public ChatTemplateException(String message) {
    super(message);
  }
}
