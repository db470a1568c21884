package io.kvtier.testkit;

import java.lang.reflect.Method;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestWatcher;
import org.opentest4j.TestAbortedException;

/**
 * Makes randomized tests reproducible: resolves a {@link Random} parameter seeded from the
 * {@linkplain TestSeeds#masterSeed() master seed} and the test's unique id, and when a test fails
 * prints (and attaches to the failure as a suppressed exception) the line that reproduces it:
 * {@code reproduce with -Dkvtier.tests.seed=<seed> -Dtest=<Class>#<method>}.
 *
 * <p>Use with {@code @ExtendWith(SeedExtension.class)}; the testkit's conformance suites carry
 * it already.
 */
public final class SeedExtension
    implements ParameterResolver, TestWatcher, TestExecutionExceptionHandler {

  /** Creates the extension; JUnit instantiates it. */
  public SeedExtension() {}

  /**
   * The seed of a test's {@link Random} parameter.
   *
   * @param context the test's context
   * @return the seed derived from the master seed and the test's unique id
   */
  public static long seedOf(ExtensionContext context) {
    return TestSeeds.seedFor(context.getUniqueId());
  }

  /**
   * The {@code -Dtest} filter that selects the test of {@code context}.
   *
   * @param context the test's context
   * @return {@code SimpleClassName#method}, or the class alone outside a method
   */
  public static String testFilter(ExtensionContext context) {
    return testFilter(context.getRequiredTestClass(), context.getTestMethod());
  }

  /**
   * The {@code -Dtest} filter that selects a test.
   *
   * @param testClass the test's class
   * @param method the test method, or empty for the whole class
   * @return {@code SimpleClassName#method}, or the class alone
   */
  public static String testFilter(Class<?> testClass, Optional<Method> method) {
    String cls = testClass.getSimpleName();
    return method.map(m -> cls + "#" + m.getName()).orElse(cls);
  }

  /**
   * Attaches the reproduce line to a failure as a suppressed exception without a stack trace;
   * an aborted test (a failed assumption) is not a failure and gets nothing.
   *
   * @param failure what the test threw
   * @param testFilter the test, as {@link #testFilter(Class, Optional)} gives it
   * @return {@code failure}, for rethrowing
   */
  public static Throwable withReproduceLine(Throwable failure, String testFilter) {
    if (!(failure instanceof TestAbortedException)) {
      failure.addSuppressed(new ReproduceWith(TestSeeds.reproduceLine(testFilter)));
    }
    return failure;
  }

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    return parameter.getParameter().getType() == Random.class;
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
    return new Random(seedOf(context));
  }

  @Override
  public void handleTestExecutionException(ExtensionContext context, Throwable throwable)
      throws Throwable {
    // Attached to the failure itself so that the line shows in surefire's report even when the
    // console output of the run is lost.
    throw withReproduceLine(throwable, testFilter(context));
  }

  @Override
  public void testFailed(ExtensionContext context, Throwable cause) {
    System.err.println(
        "[kvtier] "
            + context.getDisplayName()
            + " failed: "
            + TestSeeds.reproduceLine(testFilter(context)));
  }

  /** Carries the reproduce line on a failure; it has no stack trace of its own. */
  static final class ReproduceWith extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ReproduceWith(String line) {
      super(line, null, false, false);
    }
  }
}
