/**
 * Wrapper providers that assert correct use (double free, use after free, reading a page whose
 * copy has not completed) and inject faults, and {@link io.kvtier.asserting.Providers}.
 */
package io.kvtier.asserting;
