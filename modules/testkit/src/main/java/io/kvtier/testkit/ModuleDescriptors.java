package io.kvtier.testkit;

import io.kvtier.spi.KvTierProvider;
import io.kvtier.spi.ProviderName;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleReader;
import java.lang.module.ResolvedModule;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Checks of a module's descriptor that every module's tests run: its {@code provides} agree with
 * its {@code META-INF/services} files, its exports are exactly the intended ones, and its
 * providers carry a {@link ProviderName} equal to their {@code name()}.
 *
 * <p>The checks need the module as a named module: run the tests on the module path (surefire's
 * default for a module with a {@code module-info.java}). On the class path they fail and say so.
 * Failures are {@link AssertionError}s that name the module, what differs, and where to fix it.
 */
public final class ModuleDescriptors {

  private static final String SERVICES = "META-INF/services/";

  private ModuleDescriptors() {}

  /**
   * Checks that every {@code provides} of the module's descriptor is listed, with exactly the same
   * providers, in {@code META-INF/services/<service>}, and that every services file of the module
   * has a matching {@code provides}.
   *
   * @param module the module, for example {@code SomeProvider.class.getModule()}
   * @throws AssertionError naming each service whose two declarations differ
   */
  public static void assertProvidesMatchServiceFiles(Module module) {
    ModuleDescriptor descriptor = descriptorOf(module);
    Map<String, Set<String>> declared = new TreeMap<>();
    for (ModuleDescriptor.Provides p : descriptor.provides()) {
      declared.put(p.service(), new TreeSet<>(p.providers()));
    }
    Map<String, List<String>> files = new TreeMap<>();
    for (String service : serviceFileNames(module)) {
      files.put(service, serviceFileLines(module, service));
    }
    for (String service : declared.keySet()) {
      files.computeIfAbsent(service, s -> serviceFileLines(module, s));
    }
    List<String> problems = providesProblems(declared, files);
    fail(module, problems, "make `provides` in module-info.java and the services files agree");
  }

  /**
   * Compares {@code provides} declarations with services files, in both directions.
   *
   * @param declared each service of the descriptor with its providers
   * @param files each services file's service with its provider lines, in file order
   * @return one message per service whose two declarations differ, empty when they agree
   */
  static List<String> providesProblems(
      Map<String, Set<String>> declared, Map<String, List<String>> files) {
    List<String> problems = new ArrayList<>();
    Set<String> services = new TreeSet<>(declared.keySet());
    services.addAll(files.keySet());
    for (String service : services) {
      Set<String> inDescriptor = new TreeSet<>(declared.getOrDefault(service, Set.of()));
      List<String> lines = files.getOrDefault(service, List.of());
      Set<String> inFile = new TreeSet<>(lines);
      if (inFile.size() != lines.size()) {
        problems.add(SERVICES + service + " lists a provider twice: " + lines);
      }
      if (!inDescriptor.equals(inFile)) {
        problems.add(
            "service "
                + service
                + ": module-info provides "
                + inDescriptor
                + " but "
                + SERVICES
                + service
                + " lists "
                + inFile
                + " (only in module-info: "
                + minus(inDescriptor, inFile)
                + ", only in the services file: "
                + minus(inFile, inDescriptor)
                + ")");
      }
    }
    return problems;
  }

  /**
   * Checks that the module exports exactly {@code intendedPackages} to everyone and has no
   * qualified exports.
   *
   * @param module the module
   * @param intendedPackages the packages it must export without qualification
   * @throws AssertionError listing the unexpected and the missing exports
   */
  public static void assertExports(Module module, Set<String> intendedPackages) {
    assertExports(module, intendedPackages, Map.of());
  }

  /**
   * Checks that the module exports exactly {@code intendedPackages} to everyone and exactly
   * {@code intendedQualified} to the named modules.
   *
   * @param module the module
   * @param intendedPackages the packages it must export without qualification
   * @param intendedQualified each package it must export with qualification, to the modules it
   *     must be exported to
   * @throws AssertionError listing the unexpected and the missing exports
   */
  public static void assertExports(
      Module module, Set<String> intendedPackages, Map<String, Set<String>> intendedQualified) {
    Objects.requireNonNull(intendedPackages, "intendedPackages");
    Objects.requireNonNull(intendedQualified, "intendedQualified");
    ModuleDescriptor descriptor = descriptorOf(module);
    Set<String> unqualified = new TreeSet<>();
    Map<String, Set<String>> qualified = new TreeMap<>();
    for (ModuleDescriptor.Exports e : descriptor.exports()) {
      if (e.isQualified()) {
        qualified.put(e.source(), new TreeSet<>(e.targets()));
      } else {
        unqualified.add(e.source());
      }
    }
    List<String> problems = new ArrayList<>();
    Set<String> intended = new TreeSet<>(intendedPackages);
    if (!unqualified.equals(intended)) {
      problems.add(
          "exports "
              + unqualified
              + " but the intended exports are "
              + intended
              + " (unexpected: "
              + minus(unqualified, intended)
              + ", missing: "
              + minus(intended, unqualified)
              + ")");
    }
    Map<String, Set<String>> wanted = new TreeMap<>();
    intendedQualified.forEach((pkg, targets) -> wanted.put(pkg, new TreeSet<>(targets)));
    if (!qualified.equals(wanted)) {
      problems.add("has qualified exports " + qualified + " but the intended ones are " + wanted);
    }
    fail(module, problems, "change the exports in module-info.java or the intended set");
  }

  /**
   * Checks every provider that the module provides for a kvtier SPI: its class carries {@link
   * ProviderName}, and an instance's {@code name()} equals it. Instantiating is cheap by the SPI's
   * contract (constructors do no work), so this is safe for hardware providers too.
   *
   * @param module the module
   * @throws AssertionError naming each provider whose name is missing or differs
   */
  public static void assertProviderNames(Module module) {
    ModuleDescriptor descriptor = descriptorOf(module);
    List<String> problems = new ArrayList<>();
    for (ModuleDescriptor.Provides p : descriptor.provides()) {
      Optional<Class<? extends KvTierProvider>> spi = kvTierService(p.service());
      if (spi.isEmpty()) {
        continue;
      }
      ModuleLayer layer = Optional.ofNullable(module.getLayer()).orElse(ModuleLayer.boot());
      List<ServiceLoader.Provider<? extends KvTierProvider>> found =
          ServiceLoader.load(layer, spi.get()).stream()
              .filter(sp -> sp.type().getModule() == module)
              .collect(Collectors.toList());
      for (String providerClass : p.providers()) {
        Optional<ServiceLoader.Provider<? extends KvTierProvider>> match =
            found.stream().filter(sp -> sp.type().getName().equals(providerClass)).findFirst();
        if (match.isEmpty()) {
          problems.add(
              p.service()
                  + " provider "
                  + providerClass
                  + " was not found by"
                  + " ServiceLoader in the module's layer");
          continue;
        }
        ProviderName annotation = match.get().type().getAnnotation(ProviderName.class);
        if (annotation == null) {
          problems.add(providerClass + " lacks @ProviderName: annotate it with its name()");
          continue;
        }
        String name = match.get().get().name();
        if (!annotation.value().equals(name)) {
          problems.add(
              providerClass
                  + " has @ProviderName(\""
                  + annotation.value()
                  + "\") but name() returns \""
                  + name
                  + "\"");
        }
      }
    }
    fail(module, problems, "make @ProviderName and name() agree");
  }

  private static Optional<Class<? extends KvTierProvider>> kvTierService(String service) {
    return Stream.of(
            io.kvtier.spi.DeviceMemoryProvider.class,
            io.kvtier.spi.HostMemoryProvider.class,
            io.kvtier.spi.CollectiveProvider.class,
            io.kvtier.spi.KvStoreProvider.class)
        .<Class<? extends KvTierProvider>>map(c -> c)
        .filter(c -> c.getName().equals(service))
        .findFirst();
  }

  /**
   * The module's descriptor, failing clearly when the module is unnamed (tests on the class
   * path).
   *
   * @param module the module
   * @return its descriptor
   * @throws AssertionError if the module is unnamed
   */
  public static ModuleDescriptor descriptorOf(Module module) {
    Objects.requireNonNull(module, "module");
    if (!module.isNamed() || module.getDescriptor() == null) {
      throw new AssertionError(
          module
              + " is unnamed: the classes were loaded from the class path, so there is no"
              + " module descriptor to check; run the tests on the module path (surefire's"
              + " useModulePath=true, its default for a module with module-info.java)");
    }
    return module.getDescriptor();
  }

  /**
   * The services named by {@code META-INF/services} files in the module's content.
   *
   * @param module the module
   * @return the service names, sorted
   */
  public static Set<String> serviceFileNames(Module module) {
    descriptorOf(module);
    ModuleLayer layer = Optional.ofNullable(module.getLayer()).orElse(ModuleLayer.boot());
    ResolvedModule resolved =
        layer
            .configuration()
            .findModule(module.getName())
            .orElseThrow(
                () ->
                    new AssertionError(module.getName() + " is not in its layer's configuration"));
    try (ModuleReader reader = resolved.reference().open();
        Stream<String> names = reader.list()) {
      return names
          .filter(n -> n.startsWith(SERVICES) && n.length() > SERVICES.length() && !n.endsWith("/"))
          .map(n -> n.substring(SERVICES.length()))
          .collect(Collectors.toCollection(TreeSet::new));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list the content of module " + module.getName(), e);
    }
  }

  /**
   * The provider lines of one services file: comments ({@code #} to the end of the line) and
   * blank lines dropped, whitespace trimmed.
   *
   * @param module the module
   * @param service the service's binary name
   * @return the lines in file order, empty if the module has no such file
   */
  public static List<String> serviceFileLines(Module module, String service) {
    try (InputStream in = module.getResourceAsStream(SERVICES + service)) {
      if (in == null) {
        return List.of();
      }
      String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      return text.lines()
          .map(l -> l.indexOf('#') >= 0 ? l.substring(0, l.indexOf('#')) : l)
          .map(String::strip)
          .filter(l -> !l.isEmpty())
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot read " + SERVICES + service + " of module " + module.getName(), e);
    }
  }

  private static Set<String> minus(Set<String> a, Set<String> b) {
    Set<String> out = new TreeSet<>(a);
    out.removeAll(b);
    return out;
  }

  private static void fail(Module module, List<String> problems, String fix) {
    if (!problems.isEmpty()) {
      throw new AssertionError(
          "module " + module.getName() + ": " + String.join("; ", problems) + ". Fix: " + fix);
    }
  }
}
