// Time as the control plane reads it: the Clock of libs/runtime (injectable,
// so staleness, condition transition times and events are tested without
// waiting), and the Kubernetes timestamp format.

// Re-export kept for branches in flight; import from @warmpool/runtime
export { systemClock, type Clock } from '@warmpool/runtime';

/** Kubernetes `metav1.Time`: RFC 3339 with whole seconds. */
export function kubeTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
