// A process as the kernel counts it (Linux /proc): its memory, its CPU time and
// its scheduling, measured from outside, honestly.
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

/** The fields of /proc/`pid`/stat after the command name (index 11 utime, 12 stime, in 10 ms clock ticks). */
function statFields(pid: number): string[] {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
}

/** CPU time (user + system) a process has used, in ms (Linux /proc; clock ticks of 10 ms); NaN when unreadable. */
export function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const fields = statFields(pid);
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** CPU time every process on the machine used (user + system + irq, all cores), in ms, from /proc/stat. */
export function machineBusyMs(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  // user nice system idle iowait irq softirq steal
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = cpu;
  return (user + nice + system + irq + softirq) * 10;
}

/** What the kernel counted for a process: CPU time by mode, and how often its main thread left the CPU. */
export interface Schedule {
  /** User-mode CPU of all its threads, µs (10 ms clock ticks). */
  userMicros: number;
  /** Kernel-mode CPU of all its threads, µs. */
  systemMicros: number;
  /** The main thread's voluntary switches: each a blocking wait (epoll, a futex, …) that ended in a wake-up. */
  voluntarySwitches: number;
  /** The main thread's involuntary switches: preemptions. */
  involuntarySwitches: number;
}

/** A process's Schedule now (Linux /proc; NaN fields when unreadable). */
export function scheduleOf(pid: number): Schedule {
  try {
    const fields = statFields(pid);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const count = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1]);
    return {
      userMicros: Number(fields[11]) * 10_000,
      systemMicros: Number(fields[12]) * 10_000,
      voluntarySwitches: count('voluntary_ctxt_switches'),
      involuntarySwitches: count('nonvoluntary_ctxt_switches'),
    };
  } catch {
    return { userMicros: NaN, systemMicros: NaN, voluntarySwitches: NaN, involuntarySwitches: NaN };
  }
}

/**
 * Read and write system calls a process has made so far (/proc/`pid`/io: read(2)/readv(2), write(2)/writev(2), …),
 * and the bytes they moved (rchar, wchar: sockets and files alike).
 */
export interface IoCalls {
  reads: number;
  writes: number;
  readBytes: number;
  writtenBytes: number;
}

/** A process's IoCalls now (NaN fields when unreadable). */
export function ioCallsOf(pid: number): IoCalls {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const count = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(io)?.[1]);
    return { reads: count('syscr'), writes: count('syscw'), readBytes: count('rchar'), writtenBytes: count('wchar') };
  } catch {
    return { reads: NaN, writes: NaN, readBytes: NaN, writtenBytes: NaN };
  }
}
