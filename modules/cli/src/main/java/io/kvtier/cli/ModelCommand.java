package io.kvtier.cli;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.gguf.GgufException;
import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.LlamaShape;
import io.kvtier.gguf.RandomLlamaWriter;
import io.kvtier.model.llama.KvType;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvtier model}: model files; {@code check} says whether serve runs one, {@code synth}
 * writes a random-weight one at a real shape.
 */
@Command(
    name = "model",
    mixinStandardHelpOptions = true,
    description =
        "Model files. `kvtier model check` says whether serve runs a GGUF file, and `kvtier model"
            + " synth` writes a random-weight llama one.",
    subcommands = {ModelCommand.Check.class, ModelCommand.Synth.class})
final class ModelCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Override
  public Integer call() {
    throw new ParameterException(
        spec.commandLine(),
        "a subcommand is needed: " + String.join(", ", spec.subcommands().keySet()));
  }

  /**
   * {@code kvtier model check}: opens each file as {@code kvtier serve --model} does ({@link
   * ServedModel#gguf}) and prints what it is, or why serve refuses it.
   */
  @Command(
      name = "check",
      mixinStandardHelpOptions = true,
      description = {
        "Says of each GGUF file whether `kvtier serve --model FILE` runs its model: what it is"
            + " (architecture, layers, heads, RoPE frequency factors, tensor type, tokenizer,"
            + " context, L3 model id) or, in one line, why not (the architecture, tensor type,"
            + " tensor or setting kvtier does not run, named). It reads the header, the tokenizer"
            + " and the norm weights, not the matrices: seconds for a file of gigabytes. Where"
            + " one sequence of the file's context is more than serve's default device pool"
            + " holds, it adds the --max-context that fits and the --device-pages the context"
            + " needs, with their memory (of F32 K/V, or of the --kv-type given).",
        "Example: kvtier model check ../shared/models/tinyllamas-stories-260k-f32.gguf",
        "Exit status: 0 when serve runs every file, 1 when it refuses one, 2 on a bad option."
      })
  static final class Check implements Callable<Integer> {
    @Spec private CommandSpec spec;

    @Parameters(arity = "1..*", paramLabel = "FILE", description = "The GGUF files to check.")
    private List<Path> files;

    @Option(
        names = "--kv-type",
        paramLabel = "TYPE",
        description = "Check as serve --kv-type TYPE would serve them: f32 (the default) or f16.")
    private String kvType;

    @Override
    public Integer call() {
      if (kvType != null) {
        try {
          KvType.of(kvType);
        } catch (IllegalArgumentException e) {
          throw new ParameterException(spec.commandLine(), "--kv-type: " + e.getMessage(), e);
        }
      }
      PrintWriter printer = spec.commandLine().getOut();
      int refused = 0;
      for (Path file : files) {
        try (ServedModel model =
            ServedModel.gguf(
                file,
                Optional.empty(),
                Optional.empty(),
                Optional.empty(),
                Optional.ofNullable(kvType))) {
          printer.printf(
              "%s: kvtier runs it: %s; L3 model id %s%s%n",
              file, model.description(), model.l3ModelId(), poolHint(model));
        } catch (IllegalArgumentException | UncheckedIOException e) {
          printer.printf("%s: kvtier does not run it: %s%n", file, e.getMessage());
          refused++;
        }
        printer.flush();
      }
      return refused == 0 ? 0 : 1;
    }

    /**
     * Where one sequence of the file's context would not fit serve's default device pool (which
     * serve then refuses to start with): the two ways to serve it. Empty where it fits.
     */
    private static String poolHint(ServedModel model) {
      int page = KvTierConfig.DEFAULT_PAGE_SIZE;
      long poolTokens = (long) KvTierConfig.DEFAULT_DEVICE_PAGES * page;
      int context = model.model().maxContext();
      if (context <= poolTokens) {
        return "";
      }
      long tokenBytes = 2;
      for (String key :
          List.of(
              KvTierKeys.LAYERS,
              KvTierKeys.KV_HEADS,
              KvTierKeys.HEAD_DIM,
              KvTierKeys.DTYPE_BYTES)) {
        tokenBytes *= Long.parseLong(model.fixedKeys().get(key));
      }
      long pages = (context + page - 1) / page;
      return String.format(
          Locale.ROOT,
          "; its context of %d tokens is more than serve's default device pool holds (%d pages of"
              + " %d tokens: %d tokens, %s of K and V): serve it with --max-context %d or less, or"
              + " --device-pages %d or more (%s)",
          context,
          KvTierConfig.DEFAULT_DEVICE_PAGES,
          page,
          poolTokens,
          size(poolTokens * tokenBytes),
          poolTokens,
          pages,
          size(pages * page * tokenBytes));
    }

    /** {@code bytes} in MiB, or in GiB from 1 GiB on. */
    private static String size(long bytes) {
      return bytes < (1L << 30)
          ? String.format(Locale.ROOT, "%.0f MiB", bytes / (double) (1 << 20))
          : String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
    }
  }

  /** {@code kvtier model synth}: {@link RandomLlamaWriter} from the command line. */
  @Command(
      name = "synth",
      mixinStandardHelpOptions = true,
      description = {
        "Writes a llama (or gemma3) GGUF file (version 3, which llama.cpp reads too) of seeded"
            + " random weights"
            + " at a real model's shape, with the tokenizer of a vocabulary file, for benchmarks:"
            + " it costs what the real model costs to run, but its text is noise (its"
            + " general.name says \"random weights\" and kvtier.random_weights is true).",
        "Example: kvtier model synth --shape smollm-135m"
            + " --vocab ../shared/tokenizers/ggml-vocab-llama-bpe.gguf --type q8_0 --seed 1"
            + " --out smollm-135m-q8_0.gguf",
        "Exit status: 0, or 2 on a bad option or an unusable --vocab or --out."
      })
  static final class Synth implements Callable<Integer> {
    @Spec private CommandSpec spec;

    @Option(
        names = "--shape",
        required = true,
        paramLabel = "NAME",
        description =
            "The model shape: smollm-135m, llama-1b, qwen2.5-0.5b, gemma3-1b (a gemma3 file:"
                + " sliding windows of 512), or test-tiny (2 small layers).")
    private String shape;

    @Option(
        names = "--vocab",
        required = true,
        paramLabel = "FILE",
        description =
            "A GGUF file whose tokenizer.* metadata (tokens, scores, types, merges, BOS/EOS) is"
                + " copied: a vocabulary file such as ggml-vocab-llama-bpe.gguf, or a model.")
    private Path vocabulary;

    @Option(
        names = "--type",
        paramLabel = "TYPE",
        defaultValue = "q8_0",
        description =
            "The weights' tensor type: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k,"
                + " q4_k, q5_k, q6_k, iq4_nl or iq4_xs (default: ${DEFAULT-VALUE}); norm weights"
                + " stay f32. A matrix whose rows are not whole 256-weight blocks (smollm-135m's"
                + " and qwen2.5-0.5b's attention, test-tiny's) takes llama-quantize's fallback for"
                + " a 256-weight type: q5_0 for q4_k, q5_1 for q5_k, q8_0 for q6_k, iq4_nl for"
                + " q2_k, q3_k and iq4_xs, as in a downloaded file of such a model.")
    private String type;

    @Option(
        names = "--seed",
        paramLabel = "N",
        defaultValue = "1",
        description = "The weights' seed: the same arguments write the same bytes (default: 1).")
    private long seed;

    @Option(
        names = "--out",
        required = true,
        paramLabel = "FILE",
        description = "The file to write (replaced if present).")
    private Path out;

    @Override
    public Integer call() throws IOException {
      LlamaShape llamaShape = shape();
      GgufTensorType tensorType = tensorType();
      if (!Files.isRegularFile(vocabulary)) {
        throw new UnusableInputException("--vocab " + vocabulary + ": no such file");
      }
      Path parent = out.toAbsolutePath().getParent();
      if (parent == null || !Files.isDirectory(parent)) {
        throw new UnusableInputException(
            "--out " + out + ": the directory " + parent + " does not exist; create it first");
      }
      long started = System.nanoTime();
      int vocabularySize;
      try (GgufFile vocab = GgufFile.open(vocabulary)) {
        if (!vocab.has("tokenizer.ggml.tokens")) {
          throw new UnusableInputException(
              "--vocab "
                  + vocabulary
                  + ": has no tokenizer.ggml.tokens; give a vocabulary GGUF file such as"
                  + " ggml-vocab-llama-bpe.gguf");
        }
        vocabularySize = vocab.getArray("tokenizer.ggml.tokens").size();
        RandomLlamaWriter.write(llamaShape, vocab, tensorType, seed, out);
      } catch (GgufException e) {
        throw new UnusableInputException("--vocab " + vocabulary + ": " + e.getMessage(), e);
      }
      double seconds = (System.nanoTime() - started) / 1e9;
      PrintWriter printer = spec.commandLine().getOut();
      printer.printf(
          Locale.ROOT,
          "wrote %s: %s (random weights), %d layers, width %d, heads %d/%d, feed-forward %d,"
              + " vocabulary %d from %s, %s, seed %d: %.1fM weights, %.1f MB in %.1f s%n",
          out,
          llamaShape.name(),
          llamaShape.blockCount(),
          llamaShape.embeddingLength(),
          llamaShape.headCount(),
          llamaShape.headCountKv(),
          llamaShape.feedForwardLength(),
          vocabularySize,
          vocabulary.getFileName(),
          typesWritten(llamaShape, tensorType),
          seed,
          llamaShape.parameterCount(vocabularySize) / 1e6,
          Files.size(out) / 1e6,
          seconds);
      printer.flush();
      return 0;
    }

    /** The type asked for, and the fallbacks its rows took ({@link RandomLlamaWriter#typeFor}). */
    private static String typesWritten(LlamaShape shape, GgufTensorType type) {
      String fallbacks =
          IntStream.of(shape.embeddingLength(), shape.feedForwardLength())
              .mapToObj(columns -> RandomLlamaWriter.typeFor(type, columns))
              .filter(t -> t != type)
              .distinct()
              .map(t -> t.name().toLowerCase(Locale.ROOT))
              .collect(Collectors.joining(", "));
      String name = type.name().toLowerCase(Locale.ROOT);
      return fallbacks.isEmpty()
          ? name
          : name + " (" + fallbacks + " where rows are not whole 256-weight blocks)";
    }

    private LlamaShape shape() {
      try {
        return LlamaShape.of(shape);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), "--shape: " + e.getMessage());
      }
    }

    private GgufTensorType tensorType() {
      String supported =
          RandomLlamaWriter.TYPES.stream()
              .map(t -> t.name().toLowerCase(Locale.ROOT))
              .sorted()
              .collect(Collectors.joining(", "));
      try {
        GgufTensorType t = GgufTensorType.valueOf(type.toUpperCase(Locale.ROOT));
        if (RandomLlamaWriter.TYPES.contains(t)) {
          return t;
        }
      } catch (IllegalArgumentException e) {
        // an unknown name: the same answer as a known type that cannot be written
      }
      throw new ParameterException(
          spec.commandLine(), "--type: '" + type + "' cannot be written; give one of " + supported);
    }
  }
}
