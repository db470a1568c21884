package io.kvtier.route;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.hazelcast.core.HazelcastInstance;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One pool of replicas behind the router: the unified replicas of {@code --replica}, or the
 * prefill or the decode replicas of {@code --prefill}/{@code --decode}. Each pool has its own
 * {@link PrefixIndex}, fed by its own replicas' KV events, its own load and rotation, and picks
 * its replica by {@link RouteScore} (or in turn). Thread-safe: request threads choose and
 * release, the health thread puts replicas back.
 */
final class ReplicaPool implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(ReplicaPool.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * How long a routed prompt's blocks count as cached at its replica before its events confirm
   * them ({@link PrefixIndex#routed}): longer than a request waits in a loaded replica's queue.
   */
  private static final long PREDICTION_NANOS = 30_000_000_000L;

  private final KvRouter.Pool pool;
  private final List<ReplicaSpec> replicas;
  private final PrefixIndex index;
  private final RouteScore score;
  private final RoutePolicy policy;
  private final List<ReplicaEventSource> events = new ArrayList<>();
  private final boolean[] healthy;
  // Why a replica is kept out for its role (its /health names a role this pool cannot use).
  private final String[] misfit;
  private final long[] loadBlocks;
  private final long[] inFlight;
  private final AtomicLong[] routed;
  private final AtomicLong[] failures;
  private final AtomicLong retries = new AtomicLong();
  private final AtomicLong unavailable = new AtomicLong();
  private long turn;

  /**
   * Starts following the replicas' events.
   *
   * @param pool which pool this is
   * @param replicas its replicas, 1 to 64
   * @param score its scoring weights
   * @param policy how its replica is picked
   * @param hazelcast the cluster of the ringbuffers some replicas publish to
   * @param inRotation per replica, whether it starts in rotation (one found down or of the wrong
   *     role at start is put in by the health check)
   */
  ReplicaPool(
      KvRouter.Pool pool,
      List<ReplicaSpec> replicas,
      RouteScore score,
      RoutePolicy policy,
      Optional<HazelcastInstance> hazelcast,
      boolean[] inRotation) {
    check(pool, replicas, hazelcast);
    this.pool = pool;
    this.replicas = List.copyOf(replicas);
    this.score = score;
    this.policy = policy;
    int n = this.replicas.size();
    this.index = new PrefixIndex(n);
    this.healthy = inRotation.clone();
    this.misfit = new String[n];
    this.loadBlocks = new long[n];
    this.inFlight = new long[n];
    this.routed = new AtomicLong[n];
    this.failures = new AtomicLong[n];
    for (int r = 0; r < n; r++) {
      routed[r] = new AtomicLong();
      failures[r] = new AtomicLong();
      ReplicaSpec spec = this.replicas.get(r);
      int replica = r;
      events.add(
          spec.ringbuffer()
              .<ReplicaEventSource>map(
                  name ->
                      new HazelcastReplicaEvents(
                          replica, hazelcast.orElseThrow().getRingbuffer(name), index))
              .orElseGet(() -> new ReplicaEvents(replica, spec.events(), spec.replay(), index)));
      if (!healthy[r]) {
        // Nothing of it in the index until it is in rotation; then its events are read again.
        events.get(r).forget();
      }
    }
  }

  /**
   * Checks a pool's replicas before anything starts.
   *
   * @throws IllegalArgumentException if there are none or more than 64, or a replica's events
   *     are in a ringbuffer and no cluster is given
   */
  static void check(
      KvRouter.Pool pool, List<ReplicaSpec> replicas, Optional<HazelcastInstance> hazelcast) {
    if (replicas.isEmpty() || replicas.size() > 64) {
      throw new IllegalArgumentException(
          pool.option() + " is given " + replicas.size() + " times: give 1 to 64 replicas");
    }
    for (ReplicaSpec spec : replicas) {
      if (spec.ringbuffer().isPresent() && hazelcast.isEmpty()) {
        throw new IllegalArgumentException(
            pool.option()
                + " "
                + spec.http()
                + ","
                + spec.events()
                + " reads a Hazelcast ringbuffer: give the cluster (--hazelcast-addresses)");
      }
    }
  }

  KvRouter.Pool pool() {
    return pool;
  }

  List<ReplicaSpec> replicas() {
    return replicas;
  }

  PrefixIndex index() {
    return index;
  }

  /** Requests sent to each replica (the last try of each). */
  long[] routed() {
    return Arrays.stream(routed).mapToLong(AtomicLong::get).toArray();
  }

  /** Times each replica was found failing and taken out of rotation. */
  long[] failures() {
    return Arrays.stream(failures).mapToLong(AtomicLong::get).toArray();
  }

  /** Requests sent again to another replica of this pool after one failed them. */
  long retries() {
    return retries.get();
  }

  /** Requests the router answered 503 because no replica of this pool could take them. */
  long unavailable() {
    return unavailable.get();
  }

  void countRetry() {
    retries.incrementAndGet();
  }

  void countRouted(int r) {
    routed[r].incrementAndGet();
  }

  void countUnavailable() {
    unavailable.incrementAndGet();
  }

  /** Requests sent to each replica and not yet answered. */
  synchronized long[] inFlight() {
    return inFlight.clone();
  }

  /** Whether each replica is in rotation. */
  synchronized boolean[] healthy() {
    return healthy.clone();
  }

  /** Whether any replica is in rotation. */
  synchronized boolean anyInRotation() {
    for (boolean h : healthy) {
      if (h) {
        return true;
      }
    }
    return false;
  }

  /** Batches of events applied per replica. */
  long[] eventBatches() {
    return events.stream().mapToLong(ReplicaEventSource::applied).toArray();
  }

  /**
   * The replica for a prompt, not one of {@code tried}, and the load the request adds there;
   * null if none is in rotation. The load is the work the pool's replicas do for it: for the
   * unified and prefill pools the prompt blocks the replica does not cache (the prefill it is
   * asked for), for the decode pool every prompt block (the KV the replica holds while it
   * generates); at least 1.
   */
  synchronized Choice choose(long[] hashes, boolean[] tried) {
    int[][] match = index.match(hashes);
    int best = -1;
    double bestScore = Double.NEGATIVE_INFINITY;
    int n = replicas.size();
    long start = turn++;
    for (int k = 0; k < n; k++) {
      int r = (int) ((start + k) % n);
      if (!healthy[r] || tried[r]) {
        continue;
      }
      if (policy == RoutePolicy.ROUND_ROBIN) {
        best = r;
        break;
      }
      double s = score.score(match[r][0], match[r][1], loadBlocks[r]);
      if (best < 0 || s > bestScore || (s == bestScore && loadBlocks[r] < loadBlocks[best])) {
        best = r;
        bestScore = s;
      }
    }
    if (best < 0) {
      return null;
    }
    long load =
        Math.max(
            1,
            pool == KvRouter.Pool.DECODE
                ? hashes.length
                : hashes.length - match[best][0] - match[best][1]);
    index.routed(best, hashes, System.nanoTime() + PREDICTION_NANOS);
    loadBlocks[best] += load;
    inFlight[best]++;
    return new Choice(best, load);
  }

  /** A replica chosen and the load the request adds to it until it is answered. */
  record Choice(int replica, long load) {}

  synchronized void done(Choice c) {
    loadBlocks[c.replica()] -= c.load();
    inFlight[c.replica()]--;
  }

  /** Takes a failed replica out of rotation and forgets its blocks, once. */
  synchronized void markDown(int r, IOException e) {
    if (healthy[r]) {
      LOG.log(
          System.Logger.Level.WARNING,
          pool.label()
              + " replica "
              + r
              + " ("
              + replicas.get(r).http()
              + ") unreachable, out of rotation: "
              + e);
      healthy[r] = false;
      failures[r].incrementAndGet();
      events.get(r).forget();
      index.clear(r);
    }
  }

  /** Why replicas are out of rotation for their role, for the 503 of an empty pool. */
  synchronized String misfits() {
    StringBuilder out = new StringBuilder();
    for (String m : misfit) {
      if (m != null) {
        out.append(out.isEmpty() ? "" : "; ").append(m);
      }
    }
    return out.toString();
  }

  /**
   * Puts back the replicas out of rotation that answer again (the health thread, every second):
   * the unified pool asks {@code GET /v1/models}, the prefill and decode pools {@code GET
   * /health}, whose {@code role} must fit the pool.
   */
  void checkHealth(HttpClient client, Duration timeout, Optional<String> replicaApiKey) {
    for (int r = 0; r < replicas.size(); r++) {
      synchronized (this) {
        if (healthy[r]) {
          continue;
        }
      }
      Health h =
          pool == KvRouter.Pool.REPLICA
              ? (answers(client, replicas.get(r).http(), timeout, replicaApiKey)
                  ? Health.UP
                  : Health.DOWN)
              : health(client, replicas.get(r).http(), timeout);
      String why = h.misfit(pool, replicas.get(r).http());
      synchronized (this) {
        if (why != null && !why.equals(misfit[r])) {
          LOG.log(System.Logger.Level.ERROR, why + "; kept out of rotation");
        }
        misfit[r] = why;
        if (h.up() && why == null) {
          healthy[r] = true;
        }
      }
      if (h.up() && why == null) {
        events.get(r).resume();
        LOG.log(
            System.Logger.Level.INFO,
            pool.label() + " replica " + r + " answers again, back in rotation");
      }
    }
  }

  private static boolean answers(
      HttpClient client, URI base, Duration timeout, Optional<String> replicaApiKey) {
    try {
      HttpRequest.Builder request =
          HttpRequest.newBuilder(URI.create(base + "/v1/models")).timeout(timeout);
      replicaApiKey.ifPresent(k -> request.header("Authorization", "Bearer " + k));
      client.send(request.GET().build(), HttpResponse.BodyHandlers.discarding());
      return true;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * What a replica's {@code GET /health} says: whether it is up (200) and its {@code role}
   * ({@code both} when the answer names none: a replica of before the roles serves both).
   */
  record Health(boolean up, String role) {
    static final Health DOWN = new Health(false, "");
    static final Health UP = new Health(true, "both");

    /** Why a replica of this health cannot serve in {@code pool}; null if it can (or is down). */
    String misfit(KvRouter.Pool pool, URI base) {
      if (!up || pool.accepts(role)) {
        return null;
      }
      return pool.option()
          + " "
          + base
          + " is a "
          + role
          + " replica (its GET /health says \"role\": \""
          + role
          + "\"): "
          + pool.option()
          + " takes replicas started with kvtier serve --role "
          + pool.label()
          + " or --role both";
    }
  }

  /** Asks a replica's {@code GET /health}; down if it does not answer 200 with a JSON object. */
  static Health health(HttpClient client, URI base, Duration timeout) {
    try {
      HttpResponse<byte[]> r =
          client.send(
              HttpRequest.newBuilder(URI.create(base + "/health")).timeout(timeout).GET().build(),
              HttpResponse.BodyHandlers.ofByteArray());
      if (r.statusCode() != 200) {
        return Health.DOWN;
      }
      JsonNode body = JSON.readTree(r.body());
      if (body == null || !body.isObject()) {
        return Health.DOWN;
      }
      JsonNode role = body.get("role");
      return new Health(true, role != null && role.isTextual() ? role.asText() : "both");
    } catch (IOException e) {
      return Health.DOWN;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Health.DOWN;
    }
  }

  /** Stops following events. */
  @Override
  public void close() {
    for (ReplicaEventSource e : events) {
      e.close();
    }
  }
}
