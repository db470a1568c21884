package io.kvtier.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import java.io.IOException;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.util.Locale;
import java.util.Objects;

/**
 * The CLI's machine-readable output ({@code simulate --json}, {@code backends --json}), written
 * with Jackson's streaming generator: compact, one line, fields in the order written.
 *
 * <p>Fractions go through {@link #fraction}: a fixed six decimals, as the documented output has
 * always had ({@code "perTick":2.379167}, {@code "wallSeconds":0.488250}), where Jackson's own
 * {@code double} form would print the shortest repeating digits ({@code 0.48825}) or an exponent.
 */
final class CliJson {
  /** Writes one document. */
  @FunctionalInterface
  interface Body {
    /**
     * Writes the document's single top-level value.
     *
     * @param json the generator
     * @throws IOException never for the in-memory target, but the generator declares it
     */
    void write(JsonGenerator json) throws IOException;
  }

  // Plain BigDecimal text, so a fraction's trailing zeros stay and no exponent appears; a
  // control character in a string as a six-character escape with lower-case hex digits (u001b),
  // as kvtier has always written it.
  private static final JsonFactory FACTORY =
      JsonFactory.builder()
          .enable(StreamWriteFeature.WRITE_BIGDECIMAL_AS_PLAIN)
          .disable(JsonWriteFeature.WRITE_HEX_UPPER_CASE)
          .build();

  private CliJson() {}

  /**
   * The text of one document.
   *
   * @param body what writes it
   * @return the compact JSON text, without a final newline
   */
  static String write(Body body) {
    Objects.requireNonNull(body, "body");
    StringWriter out = new StringWriter();
    try (JsonGenerator json = FACTORY.createGenerator(out)) {
      body.write(json);
    } catch (IOException e) {
      // A StringWriter does not fail; what Jackson reports here is misuse (a value where a name
      // must stand, an end without its start), a bug in the caller.
      throw new IllegalStateException("cannot write the JSON document: " + e.getMessage(), e);
    }
    return out.toString();
  }

  /**
   * A fraction as a JSON number with six decimals.
   *
   * @param value a finite value (a duration or a ratio)
   * @return the number to write
   * @throws IllegalArgumentException if the value is NaN or infinite, which JSON cannot hold
   */
  static BigDecimal fraction(double value) {
    if (!Double.isFinite(value)) {
      throw new IllegalArgumentException(
          "a JSON number must be finite, got " + value + ": the value is a bug in its source");
    }
    // Six decimals are more than a timer gives; the format rounds as the output always has.
    return new BigDecimal(String.format(Locale.ROOT, "%.6f", value));
  }
}
