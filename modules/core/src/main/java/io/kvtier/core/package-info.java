/** The kvtier engine's entry points. */
package io.kvtier.core;
