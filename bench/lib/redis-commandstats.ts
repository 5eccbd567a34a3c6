// Redis's own count of the commands it has run and of its time in each (INFO
// commandstats), so a reading before and after a turn gives what the turn
// cost. Scripts count once each as EVALSHA / EVAL; the commands they run
// inside count too, under their own names.
import { infoFields, respCommand, type RespTarget } from '@warmpool/harness';

/** Commands run so far: all of them, the scripts among them, each command's count and Redis's time in it (µs). */
export interface RedisCalls {
  total: number;
  scripts: number;
  byCommand: Map<string, number>;
  /** Redis's own time per command; a script's includes the commands it ran, which also count under their names. */
  usecByCommand: Map<string, number>;
}

/** Commands Redis has run so far, and how many of them were scripts (EVALSHA / EVAL): BullMQ's and the index's. */
export async function redisCalls(target: RespTarget): Promise<RedisCalls> {
  const info = infoFields(await respCommand(target, ['INFO', 'commandstats']));
  let total = 0;
  let scripts = 0;
  const byCommand = new Map<string, number>();
  const usecByCommand = new Map<string, number>();
  for (const [name, value] of Object.entries(info)) {
    if (!name.startsWith('cmdstat_')) continue;
    const calls = Number(/calls=(\d+)/.exec(value)?.[1] ?? 0);
    total += calls;
    byCommand.set(name.slice('cmdstat_'.length), calls);
    usecByCommand.set(name.slice('cmdstat_'.length), Number(/usec=(\d+)/.exec(value)?.[1] ?? 0));
    if (name === 'cmdstat_evalsha' || name === 'cmdstat_eval') scripts += calls;
  }
  return { total, scripts, byCommand, usecByCommand };
}

/** The commands run between two readings, most first: `name count` (or `name µs` for the time maps), per `per`. */
export function topCommands(before: Map<string, number>, after: Map<string, number>, per: number, digits = 2): string {
  return [...after]
    .map(([name, n]): [string, number] => [name, n - (before.get(name) ?? 0)])
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([name, n]) => `${name} ${(n / Math.max(1, per)).toFixed(digits)}`)
    .join(', ');
}

/**
 * Redis's commands over a level's turns: all of them and the scripts among them summed, and the last turn's top
 * commands by count (`top`) and by Redis's own time (`topUsec`, µs), each per claim of that turn.
 */
export class RedisTally {
  total = 0;
  scripts = 0;
  top = '';
  topUsec = '';
  readonly #target: RespTarget;

  constructor(target: RespTarget) {
    this.#target = target;
  }

  /** Runs `turn` between two readings and adds what Redis ran meanwhile. */
  async around<T extends { claims: number }>(turn: () => Promise<T>): Promise<T> {
    const before = await redisCalls(this.#target);
    const result = await turn();
    const after = await redisCalls(this.#target);
    this.total += after.total - before.total;
    this.scripts += after.scripts - before.scripts;
    this.top = topCommands(before.byCommand, after.byCommand, result.claims);
    this.topUsec = topCommands(before.usecByCommand, after.usecByCommand, result.claims, 1);
    return result;
  }
}
