// What the kernel counts for a serving process while a bench drives it: CPU
// by mode, read- and write-family system calls and the bytes they moved,
// summed over the turns measured and given per claim, so two processes driven
// alike (the control plane and the bare design) compare side by side.
//
// What they cover: CPU in 10 ms clock ticks (over 2 rounds of 3 s, ±1–2 µs
// per claim, the user/system split estimated from ticks too); /proc/<pid>/io's
// syscr and syscw, every thread's read/readv/pread and write/writev/pwrite
// (sockets and libuv's eventfd wake-ups alike), not sendmsg/recvmsg,
// epoll_wait, futex, mmap or madvise; and its rchar and wchar, the bytes
// those calls read and wrote.
import { ioCallsOf, scheduleOf } from './proc.ts';

/** What the kernel counted for a process over the turns measured: CPU by mode, read and write system calls and bytes. */
export interface KernelTally {
  userMicros: number;
  systemMicros: number;
  reads: number;
  writes: number;
  readBytes: number;
  writtenBytes: number;
}

export const emptyKernel = (): KernelTally => ({
  userMicros: 0,
  systemMicros: 0,
  reads: 0,
  writes: 0,
  readBytes: 0,
  writtenBytes: 0,
});

function kernelNow(pid: number): KernelTally {
  const { userMicros, systemMicros } = scheduleOf(pid);
  return { userMicros, systemMicros, ...ioCallsOf(pid) };
}

/** Runs `turn`, adding what the kernel counted for `pid` meanwhile to `into`. */
export async function countedBy<T>(pid: number, into: KernelTally, turn: () => Promise<T>): Promise<T> {
  const before = kernelNow(pid);
  const result = await turn();
  const after = kernelNow(pid);
  for (const key of Object.keys(into) as Array<keyof KernelTally>) into[key] += after[key] - before[key];
  return result;
}

export function kernelText(k: KernelTally, claims: number): string {
  const per = (n: number, digits: number): string => (n / Math.max(1, claims)).toFixed(digits);
  return `user ${per(k.userMicros, 0)} / system ${per(k.systemMicros, 0)} µs, ${per(k.reads, 1)} read- and ${per(k.writes, 1)} write-family calls, ${per(k.readBytes, 0)} B read and ${per(k.writtenBytes, 0)} B written`;
}
