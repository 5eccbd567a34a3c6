// The Kubernetes timestamp format. (The injectable Clock itself is libs/runtime's.)

/** Kubernetes `metav1.Time`: RFC 3339 with whole seconds. */
export function kubeTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
