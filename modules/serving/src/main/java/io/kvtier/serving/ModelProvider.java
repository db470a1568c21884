package io.kvtier.serving;

import io.kvtier.spi.ProviderName;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

/**
 * A model the serving engine can serve, found through {@link ServiceLoader} by its {@link
 * #name()}: a module declares {@code provides io.kvtier.serving.ModelProvider with ...} (and the
 * same line in {@code META-INF/services/io.kvtier.serving.ModelProvider} for the class path).
 * {@code kvtier serve} opens the model {@code tiny} so.
 */
public interface ModelProvider {

  /**
   * The name a command gives, lower case, for example {@code tiny}.
   *
   * @return the name
   */
  String name();

  /**
   * Why the model cannot be created on this machine (missing weights, native code), or empty
   * when it can.
   *
   * @return the reason, or empty
   */
  default Optional<String> unavailableReason() {
    return Optional.empty();
  }

  /**
   * Creates the model.
   *
   * @param options the model's options, checked by name and type
   * @return the model
   * @throws IllegalArgumentException naming an option that is wrong and the fix
   */
  ServingModel create(ModelOptions options);

  /**
   * Every provider on the module (or class) path, in {@link ServiceLoader} order.
   *
   * @return the providers
   */
  static List<ModelProvider> installed() {
    return ServiceLoader.load(ModelProvider.class).stream()
        .map(ServiceLoader.Provider::get)
        .toList();
  }

  /**
   * The available provider of a name.
   *
   * @param name the model's name
   * @return the provider
   * @throws IllegalArgumentException naming the installed models when none has that name, or
   *     why the named one is unavailable
   */
  static ModelProvider named(String name) {
    // Selected by the class's @ProviderName without instantiating the others: a model's
    // provider may need what another model does not (gguf's needs jdk.incubator.vector).
    List<ServiceLoader.Provider<ModelProvider>> found =
        ServiceLoader.load(ModelProvider.class).stream().toList();
    List<String> names = new ArrayList<>();
    for (ServiceLoader.Provider<ModelProvider> candidate : found) {
      ProviderName annotation = candidate.type().getAnnotation(ProviderName.class);
      ModelProvider p = annotation == null ? candidate.get() : null;
      String candidateName = annotation != null ? annotation.value() : p.name();
      names.add(candidateName);
      if (!candidateName.equals(name)) {
        continue;
      }
      ModelProvider provider = p != null ? p : candidate.get();
      provider
          .unavailableReason()
          .ifPresent(
              why -> {
                throw new IllegalArgumentException(
                    "model " + name + " is installed but unavailable: " + why);
              });
      return provider;
    }
    throw new IllegalArgumentException(
        "no model named "
            + name
            + " is installed: give one of "
            + names.stream().sorted().collect(Collectors.toList())
            + " (models are found through ServiceLoader: put the model's module on the module"
            + " path)");
  }

  /**
   * Opens the model of a name with options, as {@link #named} then {@link #create}.
   *
   * @param name the model's name
   * @param options the options, as strings
   * @return the model
   */
  static ServingModel open(String name, Map<String, String> options) {
    return named(name).create(new ModelOptions(options));
  }
}
