package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class CliJsonTest {

  @Test
  void fractionsKeepSixDecimalsWithoutAnExponent() {
    String json =
        CliJson.write(
            j -> {
              j.writeStartArray();
              for (double v : new double[] {0, 0.48825, 2.0 / 3, 1.5e-7, 5e-7, 1e21, 12345.6789}) {
                j.writeNumber(CliJson.fraction(v));
              }
              j.writeEndArray();
            });

    assertThat(json)
        .isEqualTo(
            "[0.000000,0.488250,0.666667,0.000000,0.000001,1000000000000000000000.000000,"
                + "12345.678900]");
  }

  @Test
  void aFractionThatJsonCannotHoldIsRefusedWithTheValue() {
    for (double v : new double[] {Double.NaN, Double.POSITIVE_INFINITY}) {
      assertThatThrownBy(() -> CliJson.fraction(v))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("must be finite, got " + v);
    }
  }

  @Test
  void stringsAreEscapedAndParseBack() {
    String text = "quote \" backslash \\ newline \n tab \t bell \u0007 escape \u001b é /";
    String json =
        CliJson.write(
            j -> {
              j.writeStartObject();
              j.writeStringField("text", text);
              j.writeNullField("nothing");
              j.writeNumberField("n", Long.MIN_VALUE);
              j.writeEndObject();
            });

    assertThat(json).contains("\\u0007", "\\u001b", " é /").doesNotContain("\n");
    @SuppressWarnings("unchecked")
    Map<String, Object> parsed = (Map<String, Object>) TestJson.parse(json);
    assertThat(parsed)
        .containsOnlyKeys("text", "nothing", "n")
        .containsEntry("text", text)
        .containsEntry("nothing", null)
        .containsEntry("n", Long.MIN_VALUE);
    assertThat(TestJson.parse(CliJson.write(j -> j.writeString("top")))).isEqualTo("top");
  }

  @Test
  void misuseIsABugReportedAsIllegalState() {
    assertThatThrownBy(
            () ->
                CliJson.write(
                    j -> {
                      j.writeStartObject();
                      j.writeString("a value without a name");
                    }))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("cannot write the JSON document: ");
  }
}
