/** The simulated device, host memory, transfer engine and in-process collective. */
package io.kvtier.backend.sim;
