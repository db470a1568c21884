package io.kvtier.bench;

import de.kherud.llama.InferenceParameters;
import de.kherud.llama.LlamaOutput;
import de.kherud.llama.ModelParameters;
import de.kherud.llama.args.LogFormat;
import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.LlamaShape;
import io.kvtier.gguf.RandomLlamaWriter;
import io.kvtier.model.llama.ArrayKvStore;
import io.kvtier.model.llama.LlamaModel;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Collectors;

/**
 * Prefill and decode tokens per second of kvtier's runner ({@link LlamaModel#forward} over an
 * {@link ArrayKvStore}) against llama.cpp ({@code de.kherud:llama} 4.2.0, in-process) on the same
 * random-weight files ({@link RandomLlamaWriter}) and the same prompt ids, one type after the
 * other in one JVM. Run by {@code modules/bench/llama-speed.sh}; the figures and the command are
 * in docs/PERFORMANCE.md.
 *
 * <p>Prefill is one forward pass over the prompt (kvtier) or the time to the first streamed token
 * (llama.cpp, prompt cache off, so it includes one sampled token); decode is the steady rate of
 * the following tokens. Both sides get the same thread count: llama.cpp through
 * {@code --threads}/{@code --threads-batch}, kvtier through the common fork-join pool, whose
 * parallelism the script sets to that count (the calling thread only waits for the pool). Each
 * side runs once to warm up (the JIT for kvtier, the caches for both), then {@code --repeats}
 * times; the best run is reported.
 */
public final class LlamaSpeed {
  private LlamaSpeed() {}

  record Options(
      LlamaShape shape,
      Path vocabulary,
      List<GgufTensorType> types,
      int prompt,
      int decode,
      int threads,
      int repeats,
      Path directory) {}

  record Rates(double prefill, double decode) {}

  /** Entry point; {@code --help} lists the options. */
  public static void main(String[] args) throws IOException {
    Options options = parse(args);
    int[] prompt = prompt(options);
    System.out.printf(
        Locale.ROOT,
        "shape %s, prompt %d tokens, decode %d tokens, %d threads, best of %d; %s, %d cores%n",
        options.shape.name(),
        options.prompt,
        options.decode,
        options.threads,
        options.repeats,
        System.getProperty("java.vm.version"),
        Runtime.getRuntime().availableProcessors());
    System.out.printf(
        "%-6s %14s %14s %14s %14s %9s %9s%n",
        "type",
        "kvtier pre/s",
        "llama.cpp pre/s",
        "kvtier dec/s",
        "llama.cpp dec/s",
        "pre x",
        "dec x");
    for (GgufTensorType type : options.types) {
      Path file = modelFile(options, type);
      Rates kvtier = kvtier(file, prompt, options);
      Rates cpp = llamaCpp(file, prompt, options);
      System.out.printf(
          Locale.ROOT,
          "%-6s %14.1f %14.1f %14.2f %14.2f %9.2f %9.2f%n",
          type.name().toLowerCase(Locale.ROOT),
          kvtier.prefill,
          cpp.prefill,
          kvtier.decode,
          cpp.decode,
          kvtier.prefill / cpp.prefill,
          kvtier.decode / cpp.decode);
    }
    // de.kherud:llama's server thread keeps the JVM alive after close
    System.exit(0);
  }

  private static Path modelFile(Options options, GgufTensorType type) throws IOException {
    Files.createDirectories(options.directory);
    String name = options.shape.name() + "-" + type.name().toLowerCase(Locale.ROOT) + "-seed1.gguf";
    Path file = options.directory.resolve(name);
    if (!Files.isRegularFile(file)) {
      long started = System.nanoTime();
      try (GgufFile vocabulary = GgufFile.open(options.vocabulary)) {
        RandomLlamaWriter.write(options.shape, vocabulary, type, 1, file);
      }
      System.out.printf(
          Locale.ROOT,
          "wrote %s (%.0f MB) in %.1f s%n",
          file,
          Files.size(file) / 1e6,
          (System.nanoTime() - started) / 1e9);
    }
    return file;
  }

  /** Seeded prompt ids below the vocabulary's special tokens (any id runs the same cost). */
  private static int[] prompt(Options options) throws IOException {
    int size;
    try (GgufFile vocabulary = GgufFile.open(options.vocabulary)) {
      size = vocabulary.getArray("tokenizer.ggml.tokens").size();
    }
    SplittableRandom random = new SplittableRandom(42);
    int[] ids = new int[options.prompt];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = 300 + random.nextInt(Math.min(size, 30_000) - 300);
    }
    return ids;
  }

  private static Rates kvtier(Path path, int[] prompt, Options options) throws IOException {
    try (GgufFile file = GgufFile.open(path)) {
      LlamaModel model = LlamaModel.of(file);
      int capacity = prompt.length + options.decode + 1;
      Rates best = new Rates(0, 0);
      for (int run = 0; run <= options.repeats; run++) {
        ArrayKvStore kv =
            new ArrayKvStore(model.hyperparameters().blockCount(), model.kvDim(), capacity);
        long start = System.nanoTime();
        float[] logits = model.forward(prompt, 0, kv, false)[0];
        long prefilled = System.nanoTime();
        int token = argmax(logits);
        for (int i = 0; i < options.decode; i++) {
          token = argmax(model.decode(token, prompt.length + i, kv));
        }
        long done = System.nanoTime();
        Rates rates =
            new Rates(
                prompt.length / seconds(prefilled - start),
                options.decode / seconds(done - prefilled));
        if (run > 0) {
          best =
              new Rates(Math.max(best.prefill, rates.prefill), Math.max(best.decode, rates.decode));
        }
      }
      return best;
    }
  }

  private static Rates llamaCpp(Path path, int[] prompt, Options options) {
    de.kherud.llama.LlamaModel.setLogger(LogFormat.TEXT, (level, message) -> {});
    try (de.kherud.llama.LlamaModel model =
        new de.kherud.llama.LlamaModel(
            new ModelParameters()
                .setModel(path.toString())
                .setThreads(options.threads)
                .setThreadsBatch(options.threads)
                .setCtxSize(prompt.length + options.decode + 8)
                .setBatchSize(Math.max(prompt.length, 512))
                .setUbatchSize(Math.max(prompt.length, 512))
                .setParallel(1)
                .setGpuLayers(0)
                .disableLog())) {
      Rates best = new Rates(0, 0);
      for (int run = 0; run <= options.repeats; run++) {
        InferenceParameters params =
            new InferenceParameters("")
                .setTemperature(0f)
                .setNPredict(options.decode + 1)
                .setIgnoreEos(true)
                .setCachePrompt(false);
        promptIds(params, prompt);
        List<Long> times = new ArrayList<>();
        long start = System.nanoTime();
        for (LlamaOutput output : model.generate(params)) {
          times.add(System.nanoTime());
        }
        // the last output is the stop, without a token
        long first = times.getFirst();
        long last = times.get(options.decode);
        Rates rates =
            new Rates(
                prompt.length / seconds(first - start), options.decode / seconds(last - first));
        if (run > 0) {
          best =
              new Rates(Math.max(best.prefill, rates.prefill), Math.max(best.decode, rates.decode));
        }
      }
      return best;
    }
  }

  /** The binding takes a text prompt only (and would add BOS): its JSON field gets the ids. */
  @SuppressWarnings("unchecked")
  private static void promptIds(InferenceParameters params, int[] prompt) {
    try {
      Field field = params.getClass().getSuperclass().getDeclaredField("parameters");
      field.setAccessible(true);
      ((Map<String, String>) field.get(params))
          .put(
              "prompt",
              Arrays.stream(prompt)
                  .mapToObj(Integer::toString)
                  .collect(Collectors.joining(",", "[", "]")));
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("de.kherud:llama changed: no 'parameters' map", e);
    }
  }

  private static int argmax(float[] v) {
    int best = 0;
    for (int i = 1; i < v.length; i++) {
      if (v[i] > v[best]) {
        best = i;
      }
    }
    return best;
  }

  private static double seconds(long nanos) {
    return nanos / 1e9;
  }

  private static Options parse(String[] args) {
    LlamaShape shape = LlamaShape.SMOLLM_135M;
    Path vocabulary = Path.of("../shared/tokenizers/ggml-vocab-llama-bpe.gguf");
    List<GgufTensorType> types = List.of(GgufTensorType.F32, GgufTensorType.Q8_0);
    int prompt = 128;
    int decode = 32;
    int threads = 2;
    int repeats = 2;
    Path directory = Path.of("modules/bench/target/llama-speed");
    for (int i = 0; i < args.length; i++) {
      String option = args[i];
      if (option.equals("--help")) {
        System.out.println(
            "options: --shape smollm-135m|llama-1b|test-tiny --vocab FILE --types f32,q8_0"
                + " --prompt 128 --decode 32 --threads 2 --repeats 2 --dir DIR");
        System.exit(0);
      }
      if (i + 1 >= args.length) {
        fail(option + " needs a value");
      }
      String value = args[++i];
      switch (option) {
        case "--shape" -> shape = LlamaShape.of(value);
        case "--vocab" -> vocabulary = Path.of(value);
        case "--types" ->
            types =
                Arrays.stream(value.split(","))
                    .map(t -> GgufTensorType.valueOf(t.strip().toUpperCase(Locale.ROOT)))
                    .toList();
        case "--prompt" -> prompt = Integer.parseInt(value);
        case "--decode" -> decode = Integer.parseInt(value);
        case "--threads" -> threads = Integer.parseInt(value);
        case "--repeats" -> repeats = Integer.parseInt(value);
        case "--dir" -> directory = Path.of(value);
        default -> fail("unknown option " + option + "; see --help");
      }
    }
    if (!Files.isRegularFile(vocabulary)) {
      fail("--vocab " + vocabulary + ": no such file");
    }
    return new Options(shape, vocabulary, types, prompt, decode, threads, repeats, directory);
  }

  private static void fail(String message) {
    System.err.println("llama-speed: " + message);
    System.exit(2);
  }
}
