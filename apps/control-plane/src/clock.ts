// Time as the control plane reads it. Injectable so that staleness, condition
// transition times and events can be tested without waiting.

export interface Clock {
  /** Milliseconds since the epoch (wall clock). */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Kubernetes `metav1.Time`: RFC 3339 with whole seconds. */
export function kubeTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
