package io.kvtier.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import io.kvtier.core.discovery.ProviderException;
import io.kvtier.core.discovery.ProviderKind;
import io.kvtier.core.discovery.ProviderRegistry;
import io.kvtier.core.discovery.ProviderReport;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@code kvtier backends} shows for one SPI: every provider found on the module path with
 * its availability, or why discovery itself failed (two providers with one name, a provider
 * class without its annotation).
 *
 * @param kind the SPI
 * @param providers the providers found, sorted by name; empty when none or when discovery failed
 * @param error why discovery failed, or empty
 */
record BackendListing(ProviderKind kind, List<ProviderReport> providers, Optional<String> error) {

  /** Validates and copies the fields. */
  public BackendListing {
    Objects.requireNonNull(kind, "kind");
    providers = List.copyOf(Objects.requireNonNull(providers, "providers"));
    Objects.requireNonNull(error, "error");
  }

  /**
   * Lists the providers of every SPI on the module path, instantiating each one to ask for its
   * availability.
   *
   * @param testing whether to list the testing providers ({@code @TestingProvider}, such as the
   *     {@code asserting} wrappers) too; the simulator needs them at run time, so they are on
   *     the command's module path, but they are not backends to run kvtier on
   * @return one listing per kind, in {@link ProviderKind} order
   */
  public static List<BackendListing> discover(boolean testing) {
    List<BackendListing> listings = new ArrayList<>();
    for (ProviderKind kind : ProviderKind.values()) {
      listings.add(discover(kind, testing));
    }
    return List.copyOf(listings);
  }

  private static BackendListing discover(ProviderKind kind, boolean testing) {
    try {
      List<ProviderReport> reports =
          ProviderRegistry.load(kind.spi()).reports().stream()
              .filter(r -> testing || !r.testing())
              .toList();
      return new BackendListing(kind, reports, Optional.empty());
    } catch (ProviderException e) {
      return new BackendListing(kind, List.of(), Optional.of(e.getMessage()));
    }
  }

  /**
   * The listings as a text table: a header, then one row per provider with the columns {@code
   * SPI NAME STATUS MODULE CLASS REASON}, separated by at least two spaces; the reason is last
   * and may contain spaces. A kind without providers has one row with name {@code -} and status
   * {@code none}; a kind whose discovery failed has one row with status {@code error} and the
   * message as reason.
   *
   * @param listings the listings
   * @return the table, each line ending in a newline
   */
  public static String toText(List<BackendListing> listings) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"SPI", "NAME", "STATUS", "MODULE", "CLASS", "REASON"});
    for (BackendListing listing : listings) {
      String spi = listing.kind().id();
      if (listing.error().isPresent()) {
        rows.add(new String[] {spi, "-", "error", "-", "-", oneLine(listing.error().get())});
      } else if (listing.providers().isEmpty()) {
        rows.add(new String[] {spi, "-", "none", "-", "-", "no provider on the module path"});
      }
      for (ProviderReport r : listing.providers()) {
        rows.add(
            new String[] {
              spi, r.name(), r.status().label(), r.module(), r.className(), oneLine(r.reason())
            });
      }
    }
    int columns = rows.get(0).length;
    int[] widths = new int[columns];
    for (String[] row : rows) {
      for (int c = 0; c < columns - 1; c++) {
        widths[c] = Math.max(widths[c], row[c].length());
      }
    }
    StringBuilder out = new StringBuilder();
    for (String[] row : rows) {
      StringBuilder line = new StringBuilder();
      for (int c = 0; c < columns - 1; c++) {
        line.append(row[c]).append(" ".repeat(widths[c] - row[c].length() + 2));
      }
      line.append(row[columns - 1]);
      out.append(line.toString().stripTrailing()).append('\n');
    }
    return out.toString();
  }

  /**
   * The listings as one JSON object: {@code {"spis":[{"spi", "interface", "configKey",
   * "autoOrder", "error", "providers":[{"name", "module", "class", "status", "available",
   * "reason"}]}]}}; {@code error} is null unless discovery failed.
   *
   * @param listings the listings
   * @return the JSON text, ending in a newline
   */
  public static String toJson(List<BackendListing> listings) {
    Objects.requireNonNull(listings, "listings");
    return CliJson.write(json -> writeJson(json, listings)) + "\n";
  }

  private static void writeJson(JsonGenerator json, List<BackendListing> listings)
      throws IOException {
    json.writeStartObject();
    json.writeArrayFieldStart("spis");
    for (BackendListing listing : listings) {
      ProviderKind kind = listing.kind();
      json.writeStartObject();
      json.writeStringField("spi", kind.id());
      json.writeStringField("interface", kind.spi().getName());
      json.writeStringField("configKey", kind.configKey());
      json.writeArrayFieldStart("autoOrder");
      for (String name : kind.defaultAutoOrder()) {
        json.writeString(name);
      }
      json.writeEndArray();
      json.writeStringField("error", listing.error().orElse(null));
      json.writeArrayFieldStart("providers");
      for (ProviderReport r : listing.providers()) {
        json.writeStartObject();
        json.writeStringField("name", r.name());
        json.writeStringField("module", r.module());
        json.writeStringField("class", r.className());
        json.writeStringField("status", r.status().label());
        json.writeBooleanField("available", r.available());
        json.writeStringField("reason", r.reason());
        json.writeEndObject();
      }
      json.writeEndArray();
      json.writeEndObject();
    }
    json.writeEndArray();
    json.writeEndObject();
  }

  private static String oneLine(String text) {
    return text.replaceAll("\\s*\\R\\s*", " ").strip();
  }
}
