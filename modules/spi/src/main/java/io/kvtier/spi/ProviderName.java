package io.kvtier.spi;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Declares the stable name of a provider class, so that discovery can select a provider by name
 * from {@link java.util.ServiceLoader.Provider#type()} without instantiating the providers that
 * are not selected (a CUDA provider must not load native code unless it is chosen). The value
 * must equal what {@link KvTierProvider#name()} returns; the engine checks that it does.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface ProviderName {
  /**
   * The provider's name: lower case letters, digits and '-', unique per SPI.
   *
   * @return the name, for example {@code "sim"} or {@code "cuda"}
   */
  String value();
}
