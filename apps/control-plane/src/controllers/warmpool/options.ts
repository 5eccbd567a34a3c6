// The warm-pool driver's knobs, with the defaults the chart documents.

export interface WarmPoolDriverSettings {
  /** Periodic reconcile and warm-count sampling (default 5 s). */
  intervalMs: number;
  /** An inventory whose publishedAt has not changed for this long takes its node out of placement (default 90 s). */
  staleAfterMs: number;
  /** Consecutive failed calls (pushes or probes) after which a node leaves placement (default 3). */
  failureThreshold: number;
  /**
   * Calls to agents in flight at once, fleet-wide, per kind (default 256): the
   * SetPools pushes have this bound, and the warm-count probes have the same
   * bound of their own. A fan-out to more nodes than this goes in waves, and a
   * wave starts only as answers of the previous one come back (every agent
   * applies before it answers), so each extra wave adds a whole push round trip
   * to the last node. Every node already has its own keep-alive connection, so
   * a higher bound costs a few KiB per call in flight, no sockets.
   */
  agentCallConcurrency: number;
  /** Status writes in flight at once (default 16). */
  statusConcurrency: number;
}

export const DRIVER_DEFAULTS: WarmPoolDriverSettings = {
  intervalMs: 5_000,
  staleAfterMs: 90_000,
  failureThreshold: 3,
  agentCallConcurrency: 256,
  statusConcurrency: 16,
};
