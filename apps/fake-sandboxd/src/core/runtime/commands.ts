// The simulated commands: a small fixed set that reads the sandbox's
// in-memory workspace. Nothing here starts a process or touches the host: an
// unknown program answers as upstream's runtime answers a missing executable
// (exit 1, "No such file or directory"). The working directory is the
// workspace root, which commands see as WORKSPACE_ROOT (upstream's /app).
import { sandboxPath, type ExecuteResponse } from '@warmpool/api';
import type { Workspace } from './workspace.js';

export const WORKSPACE_ROOT = '/app';

/** What a command does with its arguments; `sleep` is the one that takes time. */
type Program = (args: readonly string[], workspace: Workspace, signal: AbortSignal) => Promise<Output> | Output;

interface Output {
  stdout: string;
  stderr: string;
  exitCode: number;
}

const ok = (stdout: string): Output => ({ stdout, stderr: '', exitCode: 0 });

/** A path as a command sees it (relative to /app, or absolute under /app) → a workspace path; undefined = outside. */
function workspacePathOf(arg: string): string | undefined {
  let relative = arg;
  if (arg.startsWith('/')) {
    if (arg !== WORKSPACE_ROOT && !arg.startsWith(`${WORKSPACE_ROOT}/`)) return undefined;
    relative = arg.slice(WORKSPACE_ROOT.length);
  }
  const parsed = sandboxPath(relative);
  return parsed.ok ? parsed.path : undefined;
}

function echo(args: readonly string[]): Output {
  const newline = args[0] !== '-n';
  const words = newline ? args : args.slice(1);
  return ok(`${words.join(' ')}${newline ? '\n' : ''}`);
}

function cat(args: readonly string[], workspace: Workspace): Output {
  let stdout = '';
  let stderr = '';
  for (const arg of args) {
    const path = workspacePathOf(arg);
    const data = path === undefined ? undefined : workspace.read(path);
    if (data !== undefined) stdout += data.toString('utf8');
    else if (path !== undefined && workspace.isDirectory(path)) stderr += `cat: ${arg}: Is a directory\n`;
    else stderr += `cat: ${arg}: No such file or directory\n`;
  }
  return { stdout, stderr, exitCode: stderr === '' ? 0 : 1 };
}

function ls(args: readonly string[], workspace: Workspace): Output {
  const operands = args.filter((a) => !a.startsWith('-'));
  const target = operands[0] ?? '.';
  const path = workspacePathOf(target);
  if (path === undefined || !workspace.exists(path))
    return { stdout: '', stderr: `ls: cannot access '${target}': No such file or directory\n`, exitCode: 2 };
  if (!workspace.isDirectory(path)) return ok(`${target}\n`);
  const names = workspace.list(path).map((e) => e.name);
  return ok(names.length === 0 ? '' : `${names.join('\n')}\n`);
}

function sleep(args: readonly string[], _workspace: Workspace, signal: AbortSignal): Promise<Output> | Output {
  const seconds = Number(args[0]);
  if (args.length !== 1 || !Number.isFinite(seconds) || seconds < 0)
    return { stdout: '', stderr: `sleep: invalid time interval '${args[0] ?? ''}'\n`, exitCode: 1 };
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(ok('')), seconds * 1000);
    signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  });
}

const PROGRAMS: ReadonlyMap<string, Program> = new Map<string, Program>([
  ['echo', echo],
  ['cat', cat],
  ['ls', ls],
  ['pwd', () => ok(`${WORKSPACE_ROOT}\n`)],
  ['true', () => ok('')],
  ['false', () => ({ stdout: '', stderr: '', exitCode: 1 })],
  ['sleep', sleep],
]);

/** The programs the simulation knows, for docs and errors. */
export const SIMULATED_PROGRAMS: readonly string[] = [...PROGRAMS.keys()];

/**
 * Runs one command's words. A command still running after `timeoutMs` is stopped and answers as upstream's runtime
 * answers a timed-out process: exit 1, the reason on stderr.
 */
export async function runCommand(
  words: readonly string[],
  workspace: Workspace,
  timeoutMs: number,
): Promise<ExecuteResponse> {
  const [name = '', ...args] = words;
  const program = PROGRAMS.get(name.slice(name.lastIndexOf('/') + 1));
  if (program === undefined) return failed(`[Errno 2] No such file or directory: '${name}'`);
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const result = await Promise.race([Promise.resolve(program(args, workspace, controller.signal)), timedOut]);
    if (result === 'timeout') {
      controller.abort();
      const list = `[${words.map((w) => `'${w}'`).join(', ')}]`;
      return failed(`Command '${list}' timed out after ${timeoutMs / 1000} seconds`);
    }
    return { stdout: result.stdout, stderr: result.stderr, exit_code: result.exitCode };
  } finally {
    clearTimeout(timer);
  }
}

/** Upstream's runtime reports a command it could not run (or that timed out) as exit 1 with this stderr. */
export function failed(reason: string): ExecuteResponse {
  return { stdout: '', stderr: `Failed to execute command: ${reason}`, exit_code: 1 };
}
