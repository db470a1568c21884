package io.kvtier.core.discovery;

import io.kvtier.spi.KvTierProvider;
import io.kvtier.spi.ProviderName;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * A provider class that was found but not instantiated: its declared name, its class, and how to
 * create it. Discovery builds these from {@link ServiceLoader.Provider}s; tests build them from
 * hand-written fakes.
 *
 * @param <P> the SPI
 * @param name the name declared by the class's {@link ProviderName} annotation
 * @param type the provider class
 * @param factory creates the provider; called only when the provider is selected or listed
 */
public record ProviderCandidate<P extends KvTierProvider>(
    String name, Class<?> type, Supplier<? extends P> factory) {

  /** The words that select something other than a provider, so no provider may take them. */
  public static final Set<String> RESERVED_NAMES = Set.of("auto", "none");

  private static final Pattern NAME = Pattern.compile("[a-z0-9]([a-z0-9-]*[a-z0-9])?");

  /** Validates the fields. */
  public ProviderCandidate {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(factory, "factory");
    if (!NAME.matcher(name).matches()) {
      throw new ProviderDeclarationException(
          "provider class "
              + type.getName()
              + " declares @ProviderName(\""
              + name
              + "\"): a"
              + " provider name must be lower-case letters, digits and inner '-' (like \"sim\" or"
              + " \"cuda\"); fix the annotation");
    }
    if (RESERVED_NAMES.contains(name)) {
      throw new ProviderDeclarationException(
          "provider class "
              + type.getName()
              + " declares @ProviderName(\""
              + name
              + "\"), but '"
              + name
              + "' is reserved for selection ("
              + String.join(", ", RESERVED_NAMES.stream().sorted().toList())
              + "); rename the provider");
    }
  }

  /**
   * Whether {@code name} may be a provider's name: lower-case letters, digits and inner '-', and
   * not a {@linkplain #RESERVED_NAMES reserved word}.
   *
   * @param name a name
   * @return true if valid
   */
  public static boolean isValidName(String name) {
    return NAME.matcher(name).matches() && !RESERVED_NAMES.contains(name);
  }

  /**
   * A candidate whose name is read from the {@link ProviderName} annotation of {@code type},
   * without instantiating it.
   *
   * @param <P> the SPI
   * @param type the provider class
   * @param factory creates the provider
   * @return the candidate
   * @throws ProviderDeclarationException if the class has no {@link ProviderName} annotation
   */
  public static <P extends KvTierProvider> ProviderCandidate<P> of(
      Class<?> type, Supplier<? extends P> factory) {
    Objects.requireNonNull(type, "type");
    ProviderName annotation = type.getAnnotation(ProviderName.class);
    if (annotation == null) {
      throw new ProviderDeclarationException(
          "provider class "
              + type.getName()
              + " in "
              + moduleOf(type)
              + " has no @"
              + ProviderName.class.getName()
              + " annotation: annotate the class with its name()"
              + " so that it can be selected without being instantiated");
    }
    return new ProviderCandidate<>(annotation.value(), type, factory);
  }

  /**
   * A candidate for a provider found by {@link ServiceLoader#stream()}.
   *
   * @param <P> the SPI
   * @param provider the service loader's provider, not yet instantiated
   * @return the candidate
   * @throws ProviderDeclarationException if the class has no {@link ProviderName} annotation
   */
  public static <P extends KvTierProvider> ProviderCandidate<P> of(
      ServiceLoader.Provider<P> provider) {
    Objects.requireNonNull(provider, "provider");
    return of(provider.type(), provider);
  }

  /**
   * Whether the class takes the default {@link KvTierProvider#configNamespace()}, which is its
   * name; then the namespace is known without instantiating the class.
   *
   * @return true if {@code configNamespace()} is not overridden
   */
  boolean usesDefaultNamespace() {
    try {
      return type.getMethod("configNamespace").getDeclaringClass() == KvTierProvider.class;
    } catch (NoSuchMethodException e) {
      // Only a fake that is no KvTierProvider lacks it; then instantiating shows the real error.
      return false;
    }
  }

  /** The class's module for messages: {@code module io.kvtier.backend.sim}. */
  static String moduleOf(Class<?> type) {
    Module module = type.getModule();
    return module.isNamed() ? "module " + module.getName() : "unnamed module";
  }

  /**
   * The bare module name, for listings.
   *
   * @return the module name, or {@code "-"} for the class path
   */
  public String moduleName() {
    Module module = type.getModule();
    return module.isNamed() ? module.getName() : "-";
  }
}
