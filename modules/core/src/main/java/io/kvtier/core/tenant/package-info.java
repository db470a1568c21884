/**
 * Tenants of a server: the API keys it accepts and the tenant each names ({@link
 * io.kvtier.core.tenant.ApiKeys}), and the cache namespace a request's tenant and {@code
 * cache_salt} choose ({@link io.kvtier.core.tenant.CacheNamespaces}), so that tenants never hit
 * nor time each other's cached prefixes (docs/SERVE.md, "Tenants").
 */
package io.kvtier.core.tenant;
