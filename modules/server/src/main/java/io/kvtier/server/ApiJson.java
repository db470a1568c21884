package io.kvtier.server;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Objects;

/**
 * The server's JSON, on Jackson: a strict reader of request bodies (RFC 8259 only: no comments,
 * single quotes, unquoted names, trailing commas, leading zeros, {@code NaN} or control characters
 * in strings; duplicate names, trailing data, nesting deeper than {@value #MAX_DEPTH} and number
 * literals longer than {@value #MAX_NUMBER_LENGTH} characters are errors), and the writer of
 * responses. A bad body is a 400 naming the offset, never a stack overflow or a 500.
 */
final class ApiJson {
  /** The deepest nesting accepted; request bodies need four levels (chat content parts). */
  static final int MAX_DEPTH = 32;

  /** No field takes a longer number, and parsing a huge literal costs quadratic time. */
  static final int MAX_NUMBER_LENGTH = 100;

  private static final ObjectMapper MAPPER =
      new ObjectMapper(
              JsonFactory.builder()
                  .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                  .streamReadConstraints(
                      StreamReadConstraints.builder()
                          .maxNestingDepth(MAX_DEPTH)
                          .maxNumberLength(MAX_NUMBER_LENGTH)
                          .build())
                  .build())
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          // Decimals stay exact, so "1.0" is told apart from 1 and reported as not an integer.
          .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);

  private ApiJson() {}

  /**
   * Parses a request body.
   *
   * @param body the body, already checked to be UTF-8
   * @return exactly one JSON value
   * @throws ApiException a 400 with the offset and what was wrong
   */
  static JsonNode parse(String body) {
    Objects.requireNonNull(body, "body");
    JsonNode node;
    try {
      node = MAPPER.readTree(body);
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      long offset = at == null ? -1 : at.getCharOffset();
      throw ApiException.badRequest(
          "the body is not valid JSON"
              + (offset >= 0 ? " at offset " + offset : "")
              + ": "
              + e.getOriginalMessage());
    }
    if (node == null || node.isMissingNode()) {
      throw ApiException.badRequest(
          "the body is not valid JSON at offset " + body.length() + ": it holds no value");
    }
    return node;
  }

  /**
   * A new object to fill and {@link #write}.
   *
   * @return an empty object
   */
  static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  /**
   * A new array.
   *
   * @return an empty array
   */
  static ArrayNode array() {
    return MAPPER.createArrayNode();
  }

  /**
   * Writes a value as compact JSON.
   *
   * @param value the tree
   * @return its text
   */
  static String write(JsonNode value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      // A tree of nodes always serialises; this would be a bug in Jackson.
      throw new IllegalStateException("cannot write JSON: " + e.getMessage(), e);
    }
  }
}
