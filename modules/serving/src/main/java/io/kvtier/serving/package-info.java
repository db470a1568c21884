/**
 * The serving engine: generation requests batched on the rank loop, typed on {@link
 * io.kvtier.serving.ServingModel}.
 */
package io.kvtier.serving;
