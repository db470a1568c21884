/** The kvtier command line. */
package io.kvtier.cli;
