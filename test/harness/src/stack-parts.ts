// What one local stack has started, in start order. Invariants: stop() undoes
// the parts last-started first, once (later calls share the first run); an
// app that exits before stop() was called resolves unexpectedExit; an app's
// pid is recorded when it starts, under its name.
import { messageOf } from '@warmpool/runtime';
import type { ManagedChild } from './children.js';
import { startApp } from './stack-apps.js';
import { eachIsolated } from './teardown.js';

export interface UnexpectedExit {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  logTail: string;
}

/** Something started, in start order, so stop() can undo it in reverse. */
interface Started {
  name: string;
  stop(): Promise<unknown>;
}

export class StackParts {
  /** Resolves if one of the stack's own apps exits before stop() was called. */
  readonly unexpectedExit: Promise<UnexpectedExit>;
  readonly #logsDir: string;
  readonly #log: (line: string) => void;
  readonly #started: Started[] = [];
  readonly #appPids: Record<string, number> = {};
  #stopping: Promise<void> | undefined;
  #reportUnexpectedExit: (exit: UnexpectedExit) => void = () => undefined;

  constructor(logsDir: string, log: (line: string) => void) {
    this.#logsDir = logsDir;
    this.#log = log;
    this.unexpectedExit = new Promise<UnexpectedExit>((resolve) => {
      this.#reportUnexpectedExit = resolve;
    });
  }

  /** A part that is not one of the stack's apps (the cluster, an own redis-server): stopped in turn, not watched. */
  add(name: string, stop: () => Promise<unknown>): void {
    this.#started.push({ name, stop });
  }

  /** Starts one of the stack's apps (see startApp), to be stopped in turn and watched for an early exit. */
  startApp(name: string, entrypoint: string, args: string[]): ManagedChild {
    const child = startApp(this.#logsDir, name, entrypoint, args);
    this.#started.push({ name: child.name, stop: () => child.stop() });
    void child.exited.then(({ code, signal }) => {
      if (this.#stopping === undefined)
        this.#reportUnexpectedExit({ name: child.name, code, signal, logTail: child.logTail(20) });
    });
    this.#appPids[child.name] = child.pid;
    return child;
  }

  /** The pids of the apps started so far, by name, in start order. */
  appPids(): Record<string, number> {
    return { ...this.#appPids };
  }

  /** Stops every part, each isolated: one that fails does not leave the rest running; the first failure is thrown after. */
  stop(): Promise<void> {
    return (this.#stopping ??= (async () => {
      const failures = await eachIsolated(
        [...this.#started].reverse().map((part) => async () => {
          this.#log(`stopping ${part.name}`);
          await part.stop().catch((err: unknown) => {
            this.#log(`stopping ${part.name} failed: ${messageOf(err)}`);
            throw err;
          });
        }),
      );
      if (failures.length > 0) throw failures[0];
    })());
  }
}

/** What every part of one stack starts from, once the cluster is up and the token written. */
export interface StackContext {
  /** kubeconfig, token, logs/ and stack.json live here. */
  readonly dir: string;
  readonly kubeconfig: string;
  readonly tokenFile: string;
  /** Namespace of the sample and of the control plane's Lease. */
  readonly namespace: string;
  readonly parts: StackParts;
  readonly log: (line: string) => void;
}
