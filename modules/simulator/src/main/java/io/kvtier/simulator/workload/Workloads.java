package io.kvtier.simulator.workload;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Creates workloads from spec strings {@code name[:parameters]}:
 *
 * <ul>
 *   <li>{@code shared-prefix[:groups=64,alpha=1.0,...]} ({@link SharedPrefixWorkload})
 *   <li>{@code multiturn[:conversations=128,turns=5,...]} ({@link MultiturnWorkload})
 *   <li>{@code doc-qa[:documents=8,length=20000,asks=2,...]} ({@link DocumentQaWorkload})
 *   <li>{@code fixed:shared-prefix} and {@code fixed:multiturn} ({@link FixedTraces})
 *   <li>{@code jsonl:<path>}, a token trace file ({@link TraceJsonl})
 *   <li>{@code mooncake:<path>}, a block-hash trace file ({@link BlockHashTrace})
 * </ul>
 *
 * <p>Generator parameters not given take the defaults of WORKLOADS.md; every generator also takes
 * {@code seed} and {@code vocab}. A workload's {@link Workload#spec()} spells out all of them.
 */
public final class Workloads {

  private static final String KNOWN =
      "shared-prefix[:key=value,...], multiturn[:key=value,...], doc-qa[:key=value,...],"
          + " fixed:shared-prefix, fixed:multiturn, jsonl:<path>, mooncake:<path>";

  private Workloads() {}

  /**
   * The workload of a spec.
   *
   * @param spec for example {@code shared-prefix:groups=64,alpha=1.0} or {@code jsonl:/tmp/t.jsonl}
   * @return the workload; a file is read completely before this returns
   * @throws IllegalArgumentException for an unknown name or parameter, or a bad value; the message
   *     lists what is accepted
   * @throws TraceFormatException if a trace file does not follow its format
   */
  public static Workload parse(String spec) {
    Objects.requireNonNull(spec, "spec");
    int colon = spec.indexOf(':');
    String name = (colon < 0 ? spec : spec.substring(0, colon)).strip();
    String rest = colon < 0 ? "" : spec.substring(colon + 1);
    return switch (name) {
      case SharedPrefixWorkload.NAME -> SharedPrefixWorkload.parse(rest);
      case MultiturnWorkload.NAME -> MultiturnWorkload.parse(rest);
      case DocumentQaWorkload.NAME -> DocumentQaWorkload.parse(rest);
      case "fixed" -> fixed(requireArgument(spec, name, rest, "a fixed trace name"));
      case "jsonl" -> jsonl(Path.of(requireArgument(spec, name, rest, "a file path")));
      case BlockHashTrace.NAME -> {
        Path file = Path.of(requireArgument(spec, name, rest, "a file path"));
        yield BlockHashTrace.read(existing(spec, file));
      }
      default ->
          throw new IllegalArgumentException(
              "unknown workload '%s' in spec '%s': known workloads are %s"
                  .formatted(name, spec, KNOWN));
    };
  }

  /**
   * A fixed trace as a workload.
   *
   * @param name {@code shared-prefix} or {@code multiturn}
   * @return the workload, spec {@code fixed:<name>}
   */
  public static Workload fixed(String name) {
    return new TraceWorkload("fixed:" + name, FixedTraces.byName(name));
  }

  /**
   * A JSONL token trace file as a workload.
   *
   * @param file the file
   * @return the workload, spec {@code jsonl:<file>}
   * @throws TraceFormatException if the file does not follow the format
   */
  public static Workload jsonl(Path file) {
    String spec = "jsonl:" + file;
    return new TraceWorkload(spec, TraceJsonl.read(existing(spec, file)));
  }

  private static String requireArgument(String spec, String name, String rest, String what) {
    if (rest.isBlank()) {
      throw new IllegalArgumentException(
          "workload '%s' in spec '%s' needs %s after the colon, e.g. %s"
              .formatted(
                  name,
                  spec,
                  what,
                  switch (name) {
                    case "fixed" -> "fixed:shared-prefix";
                    default -> name + ":/path/to/trace.jsonl";
                  }));
    }
    return rest.strip();
  }

  private static Path existing(String spec, Path file) {
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(
          ("trace file %s of spec '%s' does not exist or is not a file: give the path of a trace"
                  + " file (docs/WORKLOADS.md describes the jsonl and mooncake formats: one JSON"
                  + " object per line), or run a built-in one: fixed:multiturn, fixed:shared-prefix")
              .formatted(file.toAbsolutePath(), spec));
    }
    return file;
  }
}
