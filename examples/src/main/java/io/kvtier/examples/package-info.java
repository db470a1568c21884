/** The kvtier command line. */
package io.kvtier.examples;
