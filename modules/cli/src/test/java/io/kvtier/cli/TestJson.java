package io.kvtier.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The tests' reader of the CLI's JSON output, on Jackson and strict (RFC 8259 only, a duplicate
 * member name or trailing text is an error): objects become {@code Map<String, Object>} in their
 * order, arrays {@code List<Object>}, integers {@code Long}, other numbers {@code Double}, and
 * anything that is not valid JSON an {@link IllegalArgumentException} with the offset.
 */
final class TestJson {
  private static final ObjectMapper MAPPER =
      new ObjectMapper(
              JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build())
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .enable(DeserializationFeature.USE_LONG_FOR_INTS);

  private TestJson() {}

  static Object parse(String text) {
    try {
      return MAPPER.readValue(text, Object.class);
    } catch (JsonProcessingException e) {
      long offset = e.getLocation() == null ? -1 : e.getLocation().getCharOffset();
      throw new IllegalArgumentException(
          "not valid JSON at offset " + offset + ": " + e.getOriginalMessage() + " in: " + text, e);
    }
  }
}
