/** Programs that embed kvtier; see examples/README.md for how to run each. */
package io.kvtier.examples;
