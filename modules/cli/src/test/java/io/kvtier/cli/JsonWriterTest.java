package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonWriterTest {

  @Test
  void writesNestedValuesThatParseBack() {
    String json =
        new JsonWriter()
            .beginObject()
            .name("text")
            .value("quote \" backslash \\ newline \n tab \t bell \u0007 é")
            .name("yes")
            .value(true)
            .name("n")
            .value(-42)
            .name("nothing")
            .value((String) null)
            .name("list")
            .beginArray()
            .value(1)
            .beginObject()
            .endObject()
            .beginArray()
            .endArray()
            .endArray()
            .endObject()
            .toJson();

    assertThat(json).contains("\\u0007").doesNotContain("\n");
    @SuppressWarnings("unchecked")
    Map<String, Object> parsed = (Map<String, Object>) MiniJson.parse(json);
    assertThat(parsed)
        .containsOnlyKeys("text", "yes", "n", "nothing", "list")
        .containsEntry("text", "quote \" backslash \\ newline \n tab \t bell \u0007 é")
        .containsEntry("yes", true)
        .containsEntry("n", -42L)
        .containsEntry("nothing", null)
        .containsEntry("list", List.of(1L, Map.of(), List.of()));
  }

  @Test
  void rejectsMisuse() {
    assertThatThrownBy(() -> new JsonWriter().beginObject().value("no name"))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> new JsonWriter().beginArray().name("x"))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> new JsonWriter().beginArray().endObject())
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> new JsonWriter().beginObject().toJson())
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> new JsonWriter().value(1).value(2))
        .isInstanceOf(IllegalStateException.class);
    assertThat(new JsonWriter().value("top").toJson()).isEqualTo("\"top\"");
  }
}
