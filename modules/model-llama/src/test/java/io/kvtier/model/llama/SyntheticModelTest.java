package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Small seeded random {@code llama} (separate output, grouped-query attention) and {@code qwen2}
 * (QKV biases, NeoX RoPE, tied output) files written with {@link GgufWriter}, run by
 * {@link LlamaModel} and by a plain scalar reference forward pass written from the formulas.
 */
class SyntheticModelTest {
  private static final long SEED = Long.getLong("kvtier.tests.seed", 42L);
  private static final int DIM = 64;
  private static final int HEADS = 4;
  private static final int KV_HEADS = 2;
  private static final int HEAD = DIM / HEADS;
  private static final int KV_DIM = KV_HEADS * HEAD;
  private static final int FF = 96;
  private static final int LAYERS = 2;
  private static final int VOCAB = 40;
  private static final float EPS = 1e-5f;
  private static final float BASE = 10_000f;

  /**
   * {@code llama+rope_freqs} is a llama file with Llama 3.1's {@code rope_freqs.weight}: factors
   * far from 1 (0.25 to 40), so a runner that ignored them would miss the reference by far more
   * than the tolerance.
   */
  @ParameterizedTest
  @ValueSource(strings = {"llama", "qwen2", "llama+rope_freqs"})
  void logitsMatchAScalarReference(String variant, @TempDir Path dir) throws IOException {
    Random random = new Random(SEED);
    String arch = variant.equals("qwen2") ? "qwen2" : "llama";
    boolean qwen = arch.equals("qwen2");
    Map<String, float[][]> tensors = new LinkedHashMap<>();
    if (variant.endsWith("+rope_freqs")) {
      tensors.put(
          LlamaModel.ROPE_FREQS, new float[][] {{1f, 0.25f, 3f, 0.5f, 8f, 1.5f, 40f, 0.75f}});
    }
    tensors.put("token_embd.weight", matrix(random, VOCAB, DIM));
    for (int l = 0; l < LAYERS; l++) {
      String p = "blk." + l + ".";
      tensors.put(p + "attn_norm.weight", norm(random));
      tensors.put(p + "attn_q.weight", matrix(random, DIM, DIM));
      tensors.put(p + "attn_k.weight", matrix(random, KV_DIM, DIM));
      tensors.put(p + "attn_v.weight", matrix(random, KV_DIM, DIM));
      if (qwen) {
        tensors.put(p + "attn_q.bias", matrix(random, 1, DIM));
        tensors.put(p + "attn_k.bias", matrix(random, 1, KV_DIM));
        tensors.put(p + "attn_v.bias", matrix(random, 1, KV_DIM));
      }
      tensors.put(p + "attn_output.weight", matrix(random, DIM, DIM));
      tensors.put(p + "ffn_norm.weight", norm(random));
      tensors.put(p + "ffn_gate.weight", matrix(random, FF, DIM));
      tensors.put(p + "ffn_up.weight", matrix(random, FF, DIM));
      tensors.put(p + "ffn_down.weight", matrix(random, DIM, FF));
    }
    tensors.put("output_norm.weight", norm(random));
    if (!qwen) {
      tensors.put("output.weight", matrix(random, VOCAB, DIM));
    }
    Path path = dir.resolve(arch + ".gguf");
    GgufWriter writer = new GgufWriter(3);
    writer.put("general.architecture", GgufValue.ofString(arch));
    writer.put(arch + ".context_length", GgufValue.ofUint32(32));
    writer.put(arch + ".embedding_length", GgufValue.ofUint32(DIM));
    writer.put(arch + ".block_count", GgufValue.ofUint32(LAYERS));
    writer.put(arch + ".feed_forward_length", GgufValue.ofUint32(FF));
    writer.put(arch + ".attention.head_count", GgufValue.ofUint32(HEADS));
    writer.put(arch + ".attention.head_count_kv", GgufValue.ofUint32(KV_HEADS));
    writer.put(arch + ".attention.layer_norm_rms_epsilon", GgufValue.ofFloat32(EPS));
    writer.put(arch + ".rope.freq_base", GgufValue.ofFloat32(BASE));
    tensors.forEach(
        (name, m) -> {
          long[] dims =
              m.length == 1 ? new long[] {m[0].length} : new long[] {m[0].length, m.length};
          writer.addTensor(
              name,
              GgufTensorType.F32,
              dims,
              (row, values) -> System.arraycopy(m[(int) row], 0, values, 0, values.length));
        });
    writer.write(path);

    int[] tokens = {1, 7, 33, 2, 19, 19, 5, 38, 11, 0};
    double[][] expected = reference(tensors, tokens, qwen);
    try (GgufFile file = GgufFile.open(path)) {
      LlamaModel model = LlamaModel.of(file);
      float[][] got = model.forward(tokens, 0, ArrayKvStore.forModel(model), true);
      for (int p = 0; p < tokens.length; p++) {
        for (int v = 0; v < VOCAB; v++) {
          assertThat((double) got[p][v])
              .as("%s position %d logit %d seed %d", variant, p, v, SEED)
              .isCloseTo(expected[p][v], within(1e-3));
        }
      }
    }
  }

  private static float[][] matrix(Random random, int rows, int cols) {
    float[][] m = new float[rows][cols];
    for (float[] row : m) {
      for (int i = 0; i < cols; i++) {
        row[i] = (float) (random.nextGaussian() * 0.2);
      }
    }
    return m;
  }

  private static float[][] norm(Random random) {
    float[][] m = new float[1][DIM];
    for (int i = 0; i < DIM; i++) {
      m[0][i] = (float) (1 + random.nextGaussian() * 0.1);
    }
    return m;
  }

  /** Every position recomputed from scratch, in doubles, without a KV store. */
  private static double[][] reference(Map<String, float[][]> t, int[] tokens, boolean qwen) {
    int n = tokens.length;
    double[][] x = new double[n][];
    for (int p = 0; p < n; p++) {
      x[p] = toDouble(t.get("token_embd.weight")[tokens[p]]);
    }
    for (int l = 0; l < LAYERS; l++) {
      String pre = "blk." + l + ".";
      double[][] q = new double[n][];
      double[][] k = new double[n][];
      double[][] v = new double[n][];
      for (int p = 0; p < n; p++) {
        double[] h = rmsNorm(x[p], t.get(pre + "attn_norm.weight")[0]);
        q[p] = matVec(t.get(pre + "attn_q.weight"), h);
        k[p] = matVec(t.get(pre + "attn_k.weight"), h);
        v[p] = matVec(t.get(pre + "attn_v.weight"), h);
        if (qwen) {
          addTo(q[p], t.get(pre + "attn_q.bias")[0]);
          addTo(k[p], t.get(pre + "attn_k.bias")[0]);
          addTo(v[p], t.get(pre + "attn_v.bias")[0]);
        }
        rope(q[p], HEADS, p, qwen, t.get(LlamaModel.ROPE_FREQS));
        rope(k[p], KV_HEADS, p, qwen, t.get(LlamaModel.ROPE_FREQS));
      }
      for (int p = 0; p < n; p++) {
        double[] att = new double[DIM];
        for (int h = 0; h < HEADS; h++) {
          int kvh = h / (HEADS / KV_HEADS);
          double[] s = new double[p + 1];
          double max = Double.NEGATIVE_INFINITY;
          for (int j = 0; j <= p; j++) {
            for (int i = 0; i < HEAD; i++) {
              s[j] += q[p][h * HEAD + i] * k[j][kvh * HEAD + i];
            }
            s[j] /= Math.sqrt(HEAD);
            max = Math.max(max, s[j]);
          }
          double z = 0;
          for (int j = 0; j <= p; j++) {
            s[j] = Math.exp(s[j] - max);
            z += s[j];
          }
          for (int j = 0; j <= p; j++) {
            for (int i = 0; i < HEAD; i++) {
              att[h * HEAD + i] += s[j] / z * v[j][kvh * HEAD + i];
            }
          }
        }
        addTo(x[p], matVec(t.get(pre + "attn_output.weight"), att));
      }
      for (int p = 0; p < n; p++) {
        double[] h = rmsNorm(x[p], t.get(pre + "ffn_norm.weight")[0]);
        double[] g = matVec(t.get(pre + "ffn_gate.weight"), h);
        double[] u = matVec(t.get(pre + "ffn_up.weight"), h);
        for (int i = 0; i < FF; i++) {
          g[i] = g[i] / (1 + Math.exp(-g[i])) * u[i];
        }
        addTo(x[p], matVec(t.get(pre + "ffn_down.weight"), g));
      }
    }
    float[][] out = t.getOrDefault("output.weight", t.get("token_embd.weight"));
    double[][] logits = new double[n][];
    for (int p = 0; p < n; p++) {
      logits[p] = matVec(out, rmsNorm(x[p], t.get("output_norm.weight")[0]));
    }
    return logits;
  }

  /** RoPE; pair {@code i}'s angle divided by {@code factors[0][i]} where factors is not null. */
  private static void rope(double[] v, int heads, int pos, boolean neox, float[][] factors) {
    for (int h = 0; h < heads; h++) {
      for (int i = 0; i < HEAD / 2; i++) {
        double theta =
            pos * Math.pow(BASE, -2.0 * i / HEAD) / (factors == null ? 1 : factors[0][i]);
        int a = h * HEAD + (neox ? i : 2 * i);
        int b = h * HEAD + (neox ? i + HEAD / 2 : 2 * i + 1);
        double x0 = v[a];
        double x1 = v[b];
        v[a] = x0 * Math.cos(theta) - x1 * Math.sin(theta);
        v[b] = x0 * Math.sin(theta) + x1 * Math.cos(theta);
      }
    }
  }

  private static double[] rmsNorm(double[] x, float[] w) {
    double ss = 0;
    for (double value : x) {
      ss += value * value;
    }
    double scale = 1 / Math.sqrt(ss / x.length + EPS);
    double[] out = new double[x.length];
    for (int i = 0; i < x.length; i++) {
      out[i] = x[i] * scale * w[i];
    }
    return out;
  }

  private static double[] matVec(float[][] m, double[] x) {
    double[] out = new double[m.length];
    for (int r = 0; r < m.length; r++) {
      for (int c = 0; c < x.length; c++) {
        out[r] += m[r][c] * x[c];
      }
    }
    return out;
  }

  private static void addTo(double[] x, float[] d) {
    for (int i = 0; i < x.length; i++) {
      x[i] += d[i];
    }
  }

  private static void addTo(double[] x, double[] d) {
    for (int i = 0; i < x.length; i++) {
      x[i] += d[i];
    }
  }

  private static double[] toDouble(float[] v) {
    double[] d = new double[v.length];
    for (int i = 0; i < v.length; i++) {
      d[i] = v[i];
    }
    return d;
  }
}
