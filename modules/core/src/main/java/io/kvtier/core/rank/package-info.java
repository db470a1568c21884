/**
 * The rank protocol: the only code that calls the collective. Guards that turn a broken
 * replicated-state rule into an exception naming ranks and call sites instead of a hang.
 */
package io.kvtier.core.rank;
