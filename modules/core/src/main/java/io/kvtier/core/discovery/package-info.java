/** Finding and selecting providers of the SPIs with {@link java.util.ServiceLoader}. */
package io.kvtier.core.discovery;
