/** The tiny transformer, served as the model {@code tiny}. */
package io.kvtier.model.tiny;
