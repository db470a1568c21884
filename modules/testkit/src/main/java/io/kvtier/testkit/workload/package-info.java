/** Reproducible request workloads: the fixed benchmark traces, generators and trace readers. */
package io.kvtier.testkit.workload;
