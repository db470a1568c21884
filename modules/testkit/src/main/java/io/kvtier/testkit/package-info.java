/** Seeds of randomized tests and module-descriptor checks. */
package io.kvtier.testkit;
