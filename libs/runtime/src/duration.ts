// Durations on the command line read like Go's time.ParseDuration ("250ms",
// "5s", "1m30s"), because that is what Kubernetes operators already type.

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed); // bare number = milliseconds
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(trimmed); m; m = re.exec(trimmed)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    consumed = re.lastIndex;
  }
  if (consumed === 0 || consumed !== trimmed.length) {
    throw new Error(`invalid duration "${text}" (use e.g. 250ms, 5s, 1m30s)`);
  }
  return total;
}

export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1_000 === 0 && ms > 0) return `${ms / 1_000}s`;
  return `${ms}ms`;
}
