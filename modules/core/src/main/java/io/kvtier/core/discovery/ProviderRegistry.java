package io.kvtier.core.discovery;

import io.kvtier.spi.Availability;
import io.kvtier.spi.KvTierProvider;
import io.kvtier.spi.TestingProvider;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;

/**
 * The providers of one SPI, found without instantiating them, and selected by name or by {@code
 * auto}.
 *
 * <p>Only a selected provider is instantiated (a CUDA provider must not load native code unless
 * it is chosen). Two exceptions, both on paths that cannot continue anyway or that ask for it:
 * {@link #reports()} instantiates every provider to list it, and a failed selection does so to
 * say in its message what was found and why each provider is or is not available.
 *
 * <p>Each provider is instantiated at most once per registry, so selecting the same name twice
 * gives the same object. Thread-safe.
 *
 * @param <P> the SPI
 */
public final class ProviderRegistry<P extends KvTierProvider> {

  private static final System.Logger LOG = System.getLogger(ProviderRegistry.class.getName());

  private final Class<P> spi;
  private final Map<String, ProviderCandidate<? extends P>> candidates;
  private final Optional<ProviderKind> kind;
  private final Map<String, P> instances = new HashMap<>();
  private final Map<String, ProviderDeclarationException> failures = new HashMap<>();

  private ProviderRegistry(Class<P> spi, List<? extends ProviderCandidate<? extends P>> found) {
    this.spi = Objects.requireNonNull(spi, "spi");
    Objects.requireNonNull(found, "candidates");
    Map<String, ProviderCandidate<? extends P>> byName = new HashMap<>();
    for (ProviderCandidate<? extends P> candidate : found) {
      Objects.requireNonNull(candidate, "candidate");
      ProviderCandidate<? extends P> other = byName.putIfAbsent(candidate.name(), candidate);
      if (other != null) {
        throw new ProviderConflictException(
            "two providers of "
                + spi.getName()
                + " are named '"
                + candidate.name()
                + "': class "
                + other.type().getName()
                + " in "
                + ProviderCandidate.moduleOf(other.type())
                + " and class "
                + candidate.type().getName()
                + " in "
                + ProviderCandidate.moduleOf(candidate.type())
                + "; kvtier does not pick one of them: remove one module from the module path");
      }
    }
    Map<String, ProviderCandidate<? extends P>> sorted = new LinkedHashMap<>();
    byName.values().stream()
        .sorted(Comparator.comparing(ProviderCandidate::name))
        .forEach(c -> sorted.put(c.name(), c));
    this.candidates = sorted;
    this.kind = ProviderKind.forSpi(spi);
  }

  /**
   * The providers of {@code spi} on the module path (and class path), from {@link
   * ServiceLoader#stream()}, none of them instantiated.
   *
   * @param <P> the SPI
   * @param spi the provider interface; the {@code io.kvtier.core} module {@code uses} it
   * @return the registry
   * @throws ProviderDeclarationException if a provider class lacks its {@code @ProviderName} or
   *     the service configuration is broken
   * @throws ProviderConflictException if two providers declare the same name
   */
  public static <P extends KvTierProvider> ProviderRegistry<P> load(Class<P> spi) {
    Objects.requireNonNull(spi, "spi");
    List<ProviderCandidate<P>> found = new ArrayList<>();
    try {
      ServiceLoader.load(spi).stream().forEach(p -> found.add(ProviderCandidate.of(p)));
    } catch (ServiceConfigurationError e) {
      throw new ProviderDeclarationException(
          "the service configuration of "
              + spi.getName()
              + " is broken: "
              + e.getMessage()
              + "; check the module's provides clause and META-INF/services file",
          e);
    }
    return new ProviderRegistry<>(spi, found);
  }

  /**
   * A registry of explicit candidates, for tests and for hosts that discover providers their
   * own way.
   *
   * @param <P> the SPI
   * @param spi the provider interface
   * @param candidates the candidates
   * @return the registry
   * @throws ProviderConflictException if two candidates have the same name
   */
  public static <P extends KvTierProvider> ProviderRegistry<P> of(
      Class<P> spi, List<? extends ProviderCandidate<? extends P>> candidates) {
    return new ProviderRegistry<>(spi, candidates);
  }

  /**
   * The SPI of this registry.
   *
   * @return the provider interface
   */
  public Class<P> spi() {
    return spi;
  }

  /**
   * The names of the providers found, sorted.
   *
   * @return an immutable list
   */
  public List<String> names() {
    return List.copyOf(candidates.keySet());
  }

  /**
   * The providers found, sorted by name, none instantiated by this call.
   *
   * @return an immutable list
   */
  public List<ProviderCandidate<? extends P>> candidates() {
    return List.copyOf(candidates.values());
  }

  /**
   * The provider named {@code name}, instantiated if it was not yet, and checked to be
   * available. No other provider is instantiated unless this fails.
   *
   * @param name the provider's name
   * @return the provider
   * @throws ProviderNotFoundException if no provider has that name
   * @throws ProviderUnavailableException if the provider's probe says it cannot be used
   * @throws ProviderDeclarationException if the provider cannot be instantiated or its name()
   *     differs from its annotation
   */
  public P get(String name) {
    Objects.requireNonNull(name, "name");
    if (!candidates.containsKey(name)) {
      throw new ProviderNotFoundException(messages().notFound(name, reports()));
    }
    P provider = instance(name);
    Availability availability = probe(provider);
    if (!availability.available()) {
      throw new ProviderUnavailableException(
          messages().unavailable(name, availability.reason(), reports()));
    }
    return provider;
  }

  /**
   * The first available provider in {@code order}; names not found are skipped, and providers
   * after the chosen one are not instantiated. A provider that is declared wrongly (its
   * constructor or probe throws, or its name differs) is skipped with a warning, so that a
   * broken preferred provider does not keep a working one from being chosen.
   *
   * @param order provider names, most preferred first
   * @return the provider, or empty if none in the order is found and available
   */
  public Optional<P> auto(List<String> order) {
    Objects.requireNonNull(order, "order");
    for (String name : order) {
      if (!candidates.containsKey(name)) {
        continue;
      }
      try {
        P provider = instance(name);
        if (probe(provider).available()) {
          return Optional.of(provider);
        }
      } catch (ProviderDeclarationException e) {
        LOG.log(System.Logger.Level.WARNING, "auto skips a broken provider: " + e.getMessage());
      }
    }
    return Optional.empty();
  }

  /**
   * Selects by name, or by {@code auto} with a preference order.
   *
   * @param choice a provider name, or {@code auto}
   * @param autoOrder the order {@code auto} tries
   * @return the provider
   * @throws ProviderNotFoundException if the name is not found, or {@code auto} found none of
   *     the names in its order
   * @throws ProviderUnavailableException if the provider, or every provider {@code auto} found,
   *     is unavailable (or broken)
   * @throws ProviderDeclarationException if the provider named is declared wrongly
   */
  public P select(String choice, List<String> autoOrder) {
    Objects.requireNonNull(choice, "choice");
    Objects.requireNonNull(autoOrder, "autoOrder");
    if (!choice.equals("auto")) {
      return get(choice);
    }
    Optional<P> chosen = auto(autoOrder);
    if (chosen.isPresent()) {
      return chosen.get();
    }
    List<ProviderReport> reports = reports();
    String message = messages().noneForAuto(autoOrder, reports);
    if (autoOrder.stream().anyMatch(candidates::containsKey)) {
      throw new ProviderUnavailableException(message);
    }
    throw new ProviderNotFoundException(message);
  }

  /**
   * Every provider found with its availability, instantiating each one that was not yet. A
   * provider that cannot be instantiated or probed is reported {@link
   * ProviderReport.Status#BROKEN}, not thrown.
   *
   * @return the reports, sorted by name
   */
  public List<ProviderReport> reports() {
    List<ProviderReport> reports = new ArrayList<>();
    for (ProviderCandidate<? extends P> candidate : candidates.values()) {
      reports.add(report(candidate));
    }
    return List.copyOf(reports);
  }

  /**
   * The configuration namespaces of the providers found. A provider that keeps the default
   * namespace (its name) is not instantiated for this; one that overrides it is. Broken
   * providers claim nothing.
   *
   * @return the namespaces, in name order
   */
  public Set<String> namespaces() {
    Set<String> namespaces = new LinkedHashSet<>();
    for (ProviderCandidate<? extends P> candidate : candidates.values()) {
      if (candidate.usesDefaultNamespace()) {
        namespaces.add(candidate.name());
      } else {
        try {
          namespaces.add(instance(candidate.name()).configNamespace());
        } catch (ProviderDeclarationException e) {
          // A broken provider cannot read properties; selecting it reports the real error.
        }
      }
    }
    return namespaces;
  }

  private ProviderReport report(ProviderCandidate<? extends P> candidate) {
    String spiName = spi.getName();
    String className = candidate.type().getName();
    try {
      Availability availability = probe(instance(candidate.name()));
      return new ProviderReport(
          spiName,
          candidate.name(),
          candidate.moduleName(),
          className,
          availability.available()
              ? ProviderReport.Status.AVAILABLE
              : ProviderReport.Status.UNAVAILABLE,
          availability.reason(),
          testing(candidate));
    } catch (ProviderDeclarationException e) {
      return new ProviderReport(
          spiName,
          candidate.name(),
          candidate.moduleName(),
          className,
          ProviderReport.Status.BROKEN,
          e.getMessage(),
          testing(candidate));
    }
  }

  private static boolean testing(ProviderCandidate<?> candidate) {
    return candidate.type().isAnnotationPresent(TestingProvider.class);
  }

  private synchronized P instance(String name) {
    P existing = instances.get(name);
    if (existing != null) {
      return existing;
    }
    ProviderDeclarationException failed = failures.get(name);
    if (failed != null) {
      throw failed;
    }
    ProviderCandidate<? extends P> candidate = candidates.get(name);
    String where =
        "provider class "
            + candidate.type().getName()
            + " in "
            + ProviderCandidate.moduleOf(candidate.type())
            + " ("
            + spi.getName()
            + " '"
            + name
            + "')";
    try {
      P provider = Objects.requireNonNull(candidate.factory().get(), "factory returned null");
      String actual = provider.name();
      if (!name.equals(actual)) {
        throw new ProviderDeclarationException(
            where
                + " is annotated @ProviderName(\""
                + name
                + "\") but its name() returns \""
                + actual
                + "\": make the two equal");
      }
      instances.put(name, provider);
      return provider;
    } catch (ProviderDeclarationException e) {
      failures.put(name, e);
      throw e;
    } catch (RuntimeException | ServiceConfigurationError e) {
      ProviderDeclarationException wrapped =
          new ProviderDeclarationException(
              where
                  + " could not be instantiated: "
                  + e
                  + "; a provider's constructor must do"
                  + " no work beyond field initialization (probe in availability())",
              e);
      failures.put(name, wrapped);
      throw wrapped;
    }
  }

  private Availability probe(P provider) {
    try {
      return Objects.requireNonNull(provider.availability(), "availability() returned null");
    } catch (RuntimeException e) {
      throw new ProviderDeclarationException(
          "the availability() probe of provider '"
              + provider.name()
              + "' ("
              + provider.getClass().getName()
              + ") threw "
              + e
              + "; a probe must report failures as Availability.unavailable(reason)",
          e);
    }
  }

  private SelectionMessages messages() {
    return new SelectionMessages(spi, kind);
  }
}
