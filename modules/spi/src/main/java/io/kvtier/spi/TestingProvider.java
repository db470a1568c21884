package io.kvtier.spi;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a provider that exists to test kvtier, not to run it: it checks the use of another
 * provider or injects faults into it (the {@code asserting} wrappers). It is selected like any
 * other when named, but listings ({@code kvtier backends}) leave it out unless asked for testing
 * providers, and the fix of a failed selection does not offer it as a choice. Read from the
 * class, like {@link ProviderName}, so that nothing is instantiated to tell.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface TestingProvider {}
