package io.kvtier.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The availability path never loads JCuda: checked in the class files (what the probe's classes
 * reference) and in a fresh JVM (what it loads).
 */
class CudaProbePathTest {

  /** The classes a listing of backends or an availability check runs. */
  private static final List<Class<?>> PROBE_PATH =
      List.of(
          CudaDeviceMemoryProvider.class,
          CudaHostMemoryProvider.class,
          CudaDriverProbe.class,
          CudaNatives.class,
          CudaConfig.class,
          CudaDiagnostics.class);

  /** The JCuda side, reached from the providers only through their static {@code open}. */
  private static final Set<String> OPEN_ENTRY_POINTS = Set.of("CudaDeviceMemory", "CudaHostMemory");

  private static final Pattern MODULE_CLASS =
      Pattern.compile("io/kvtier/backend/cuda/([A-Za-z0-9_$]+)");

  @Test
  void probePathClassesReferenceNoJCudaTypeAndReachTheJCudaSideOnlyThroughOpen()
      throws IOException {
    Set<String> allowed = new TreeSet<>(OPEN_ENTRY_POINTS);
    List<Class<?>> classes = new ArrayList<>();
    for (Class<?> c : PROBE_PATH) {
      classes.add(c);
      classes.addAll(List.of(c.getDeclaredClasses()));
    }
    classes.forEach(c -> allowed.add(c.getName().substring(c.getPackageName().length() + 1)));
    for (Class<?> c : classes) {
      String text = classFileText(c);
      assertThat(text).as("class file of %s", c.getName()).doesNotContain("jcuda/");
      Matcher m = MODULE_CLASS.matcher(text);
      while (m.find()) {
        assertThat(allowed)
            .as(
                "%s references io.kvtier.backend.cuda.%s, which is neither on the probe path"
                    + " nor an open() entry point",
                c.getName(), m.group(1))
            .contains(m.group(1));
      }
    }
  }

  @Test
  void aFreshJvmAnswersTheProbeWithoutLoadingAJCudaClass() throws Exception {
    String modulePath = System.getProperty("jdk.module.path");
    assumeTrue(modulePath != null, "the tests do not run on the module path");
    Process process =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xlog:class+load=info",
                "--enable-native-access=io.kvtier.backend.cuda",
                "-Djava.library.path=" + System.getProperty("java.library.path"),
                "--module-path",
                modulePath,
                "-m",
                "io.kvtier.backend.cuda/" + CudaDiagnostics.class.getName())
            .redirectErrorStream(true)
            .start();
    process.getOutputStream().close();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("the child JVM exits").isTrue();
    assertThat(process.exitValue()).as(out).isZero();
    assertThat(out)
        .as("the child's answer")
        .contains(
            "cuda: "
                + (CudaDriverProbe.cached().available() ? "available" : "unavailable")
                + ": "
                + CudaDriverProbe.cached().reason());
    assertThat(out.lines().filter(l -> l.contains("class,load")))
        .as("classes the child loaded")
        .anySatisfy(l -> assertThat(l).contains("io.kvtier.backend.cuda.CudaDriverProbe"))
        .noneSatisfy(l -> assertThat(l).containsPattern("\\] jcuda\\."));
  }

  private static String classFileText(Class<?> c) throws IOException {
    String resource = c.getName().substring(c.getPackageName().length() + 1) + ".class";
    try (InputStream in = c.getResourceAsStream(resource)) {
      assertThat(in).as(resource).isNotNull();
      // Latin-1 maps every byte to one char, so the constant pool's names read as text.
      return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
    }
  }
}
