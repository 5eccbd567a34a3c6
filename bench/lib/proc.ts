// Memory of a process as the kernel counts it (Linux /proc), so a process's
// RSS is measured from outside, honestly.
import { readFileSync } from 'node:fs';

export interface Memory {
  /** Resident set size now, bytes. */
  rss: number;
  /** Peak resident set size, bytes. */
  peak: number;
}

export function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}
