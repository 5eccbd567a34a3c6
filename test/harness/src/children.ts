// Child processes that never outlive the test that started them.
//
// Each child runs in its own process group behind a tiny sh watchdog: it execs
// the real binary (same pid) and leaves a background loop in the group that
// kills the binary and removes its temp dir once our Node process is gone, even
// after a SIGKILL no exit handler can see. On a normal exit or SIGINT/SIGTERM we
// kill every group synchronously ourselves.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { eventually } from './wait.js';

/**
 * `sh -c WATCHDOG_SCRIPT watchdog <parent-pid> <dir-to-remove|''> <command> <args...>`.
 * `$$` in the subshell is the outer shell's pid, which `exec` hands to the command.
 */
export const WATCHDOG_SCRIPT = [
  'parent=$1; cleanup=$2; shift 2',
  '( while kill -0 "$parent" 2>/dev/null; do kill -0 $$ 2>/dev/null || exit 0; sleep 1; done',
  '  kill -KILL $$ 2>/dev/null; [ -z "$cleanup" ] || rm -rf "$cleanup" ) </dev/null >/dev/null 2>&1 &',
  'exec "$@"',
].join('\n');

export interface ChildOptions {
  /** For messages: "etcd", "kube-apiserver". */
  name: string;
  command: string;
  args: string[];
  /** The child's log: stderr, and stdout too unless `stdoutFile` is given; appended. */
  logFile: string;
  /** stdout is appended here instead, apart from the log (for a spec about what a program prints where). */
  stdoutFile?: string;
  /** Written to stdin, which is then closed; without it stdin is /dev/null. */
  input?: string;
  /** The whole environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Removed by the watchdog if the test process dies without cleaning up. */
  orphanCleanupDir?: string;
}

export interface LoggedOptions {
  /** Default 20 s. */
  timeoutMs?: number;
  /** What is awaited, for the error message. */
  what?: string;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const live = new Set<ManagedChild>();
const dirsToRemove = new Set<string>();
let hooksInstalled = false;

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

function cleanupSync(): void {
  for (const child of live) killGroup(child.pid, 'SIGKILL');
  live.clear();
  for (const dir of dirsToRemove) rmSync(dir, { recursive: true, force: true });
  dirsToRemove.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  cleanupSync();
  // If nobody else listens, keep the default meaning of the signal: die by it.
  if (process.listenerCount(signal) === 1) {
    process.removeListener(signal, onSignal);
    process.kill(process.pid, signal);
  }
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', cleanupSync);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
}

/**
 * For a long-running program that stops its children itself on SIGINT/SIGTERM
 * (gracefully, in order, like `make up`): the signal hooks step aside and the
 * exit hook stays as the last resort, so `process.exit()` still kills them all.
 */
export function leaveSignalsToCaller(): void {
  installHooks();
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.removeListener(signal, onSignal);
}

/** A temp dir removed at exit even when the test never reaches its teardown. */
export function removeAtExit(dir: string): void {
  installHooks();
  dirsToRemove.add(dir);
}

export function forgetRemoveAtExit(dir: string): void {
  dirsToRemove.delete(dir);
}

export class ManagedChild {
  readonly name: string;
  readonly pid: number;
  readonly exited: Promise<ChildExit>;
  /** stderr, and stdout unless `stdoutFile` is set. */
  readonly logFile: string;
  /** Where stdout goes when it is kept apart from the log. */
  readonly stdoutFile: string | undefined;
  readonly #child: ChildProcess;
  #exit: ChildExit | undefined;

  constructor(options: ChildOptions) {
    installHooks();
    this.name = options.name;
    this.logFile = options.logFile;
    this.stdoutFile = options.stdoutFile;
    const log = openSync(options.logFile, 'a');
    let out = log;
    try {
      if (options.stdoutFile !== undefined) out = openSync(options.stdoutFile, 'a');
      this.#child = spawn(
        '/bin/sh',
        [
          '-c',
          WATCHDOG_SCRIPT,
          'watchdog',
          String(process.pid),
          options.orphanCleanupDir ?? '',
          options.command,
          ...options.args,
        ],
        {
          detached: true,
          stdio: [options.input === undefined ? 'ignore' : 'pipe', out, log],
          env: options.env ?? process.env,
          cwd: options.cwd,
        },
      );
    } finally {
      closeSync(log);
      if (out !== log) closeSync(out);
    }
    if (options.input !== undefined) {
      this.#child.stdin?.on('error', () => undefined); // the child may exit without reading it
      this.#child.stdin?.end(options.input);
    }
    if (this.#child.pid === undefined) throw new Error(`could not start ${options.name} (${options.command})`);
    this.pid = this.#child.pid;
    // A forgotten child must not keep the test process alive; the exit hook kills it.
    this.#child.unref();
    live.add(this);
    this.exited = new Promise((resolve) => {
      this.#child.once('exit', (code, signal) => {
        this.#exit = { code, signal };
        live.delete(this);
        // Sweep the watchdog loop left in the group.
        killGroup(this.pid, 'SIGKILL');
        resolve(this.#exit);
      });
    });
  }

  get running(): boolean {
    return this.#exit === undefined;
  }

  get exitStatus(): ChildExit | undefined {
    return this.#exit;
  }

  /** Sends `signal` to the whole group now, without waiting (as ChildProcess.kill). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.#exit === undefined) killGroup(this.pid, signal);
  }

  /** `signal` (SIGTERM by default) to the whole group, SIGKILL after `graceMs`. Resolves once the process is reaped. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<ChildExit> {
    if (this.#exit) return this.#exit;
    killGroup(this.pid, signal);
    let timer: NodeJS.Timeout | undefined;
    const escalate = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        killGroup(this.pid, 'SIGKILL');
        resolve();
      }, graceMs);
    });
    await Promise.race([this.exited, escalate]);
    clearTimeout(timer);
    return this.exited;
  }

  /** Everything the child logged so far: its stderr, and its stdout unless that is kept apart. */
  log(): string {
    return readOrEmpty(this.logFile);
  }

  /** What the child wrote to stdout so far (the whole log when stdout is not kept apart). */
  stdout(): string {
    return readOrEmpty(this.stdoutFile ?? this.logFile);
  }

  /**
   * Waits for the first complete log line `find` gives a value for, and returns
   * that value (e.g. the address in a "serving" line); a line `find` throws on
   * is no match. Fails at once, with the log's tail, if the child exits without
   * logging such a line.
   */
  async logged<T extends NonNullable<unknown>>(
    find: (line: string) => T | undefined,
    options: LoggedOptions = {},
  ): Promise<T> {
    const what = options.what ?? `a line in the log of ${this.name}`;
    const scan = (): T | undefined => {
      // Once the child has exited, its log is complete, and so is a last line without a newline.
      const exited = !this.running;
      const lines = this.log().split('\n');
      if (!exited) lines.pop(); // '' after the last newline, or a line still being written
      for (const line of lines) {
        let found: T | undefined;
        try {
          found = find(line);
        } catch {
          continue; // a line the finder cannot read (JSON.parse of a line that is no JSON, say) is no match
        }
        if (found !== undefined) return found;
      }
      return undefined;
    };
    return eventually(scan, {
      timeoutMs: options.timeoutMs ?? 20_000,
      what: () => `${what}; the last lines of ${this.name}:\n${this.logTail()}`,
      // One more scan after the exit: the line may have come just before it.
      abort: () =>
        this.running || scan() !== undefined
          ? undefined
          : `${this.name} exited (${JSON.stringify(this.#exit)}) before logging what was awaited`,
    });
  }

  /** The child's JSON log lines, parsed (other lines and a partial last line are skipped). */
  logLines(): Array<Record<string, unknown>> {
    const lines: Array<Record<string, unknown>> = [];
    for (const line of this.log().split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // a partial last line
      }
    }
    return lines;
  }

  /** The last lines of the child's output, for error messages. */
  logTail(lines = 40): string {
    const text = this.log().trimEnd();
    return text === '' ? '(no log)' : text.split('\n').slice(-lines).join('\n');
  }
}

export interface RunOptions {
  /** For messages; default: the command's file name. */
  name?: string;
  command: string;
  args: string[];
  /** Written to stdin, which is then closed; without it stdin is /dev/null. */
  input?: string;
  /** The whole environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** SIGKILL after this long; default 60 s. */
  timeoutMs?: number;
}

export interface RunResult extends ChildExit {
  stdout: string;
  stderr: string;
}

/**
 * Runs a short-lived command to its end behind the watchdog (`--help`,
 * kubectl), its stdout and stderr kept apart, and returns them with how it
 * exited; a command still running after `timeoutMs` is killed (signal SIGKILL).
 */
export async function runCommand(options: RunOptions): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-run-'));
  removeAtExit(dir);
  try {
    const child = new ManagedChild({
      name: options.name ?? basename(options.command),
      command: options.command,
      args: options.args,
      logFile: join(dir, 'stderr'),
      stdoutFile: join(dir, 'stdout'),
      input: options.input,
      env: options.env,
      cwd: options.cwd,
      orphanCleanupDir: dir,
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    // The caller awaits this command, so unlike a forgotten long-running child (unref'd) it keeps this process
    // alive until the exit is seen, also after the timeout's SIGKILL, when no timer is left: a program whose only
    // pending work is this wait must not end there, exit code 0, mid-work.
    const keepAlive = setInterval(() => undefined, 60_000);
    try {
      const exit = await child.exited;
      return { ...exit, stdout: child.stdout(), stderr: child.log() };
    } finally {
      clearTimeout(timer);
      clearInterval(keepAlive);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    forgetRemoveAtExit(dir);
  }
}

export interface NodeScriptOptions {
  name: string;
  /** A JS file run by this very Node. */
  script: string;
  args: string[];
  /** Added to this process's environment. */
  env?: NodeJS.ProcessEnv;
  /** The child's log: stderr, and stdout too unless `stdoutFile` is given; appended. */
  logFile: string;
  /** stdout is appended here instead, apart from the log. */
  stdoutFile?: string;
}

const scripts = new Set<NodeScript>();

/**
 * A JS file (an app's dist/main.js) run by this very Node behind the watchdog; stopScripts() ends every one still
 * running.
 */
export class NodeScript extends ManagedChild {
  constructor(options: NodeScriptOptions) {
    super({
      name: options.name,
      command: process.execPath,
      args: [options.script, ...options.args],
      logFile: options.logFile,
      stdoutFile: options.stdoutFile,
      env: { ...process.env, ...options.env },
    });
    scripts.add(this);
    void this.exited.then(() => scripts.delete(this));
  }
}

/** Stops every NodeScript still running, SIGKILL after a short grace. */
export async function stopScripts(graceMs = 5_000): Promise<void> {
  await Promise.all([...scripts].map((script) => script.stop('SIGTERM', graceMs)));
}

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Pids whose process group is `pgid` (Linux /proc), to prove nothing was left behind. */
export function processGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the ")" closing the command name: state ppid pgrp ...
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') members.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return members;
}
