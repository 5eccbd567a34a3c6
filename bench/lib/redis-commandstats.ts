// Redis's own count of the commands it has run (INFO commandstats), so a
// reading before and after a turn gives the commands the turn cost. Scripts
// count once each as EVALSHA / EVAL; the commands they run inside count too,
// under their own names.
import { infoFields, respCommand, type RespTarget } from '@warmpool/harness';

/** Commands run so far: all of them, the scripts among them, and each command's count. */
export interface RedisCalls {
  total: number;
  scripts: number;
  byCommand: Map<string, number>;
}

/** Commands Redis has run so far, and how many of them were scripts (EVALSHA / EVAL): BullMQ's and the index's. */
export async function redisCalls(target: RespTarget): Promise<RedisCalls> {
  const info = infoFields(await respCommand(target, ['INFO', 'commandstats']));
  let total = 0;
  let scripts = 0;
  const byCommand = new Map<string, number>();
  for (const [name, value] of Object.entries(info)) {
    if (!name.startsWith('cmdstat_')) continue;
    const calls = Number(/calls=(\d+)/.exec(value)?.[1] ?? 0);
    total += calls;
    byCommand.set(name.slice('cmdstat_'.length), calls);
    if (name === 'cmdstat_evalsha' || name === 'cmdstat_eval') scripts += calls;
  }
  return { total, scripts, byCommand };
}

/** The commands run between two readings, most first: `name count`. */
export function topCommands(before: Map<string, number>, after: Map<string, number>, per: number): string {
  return [...after]
    .map(([name, n]): [string, number] => [name, n - (before.get(name) ?? 0)])
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([name, n]) => `${name} ${(n / Math.max(1, per)).toFixed(2)}`)
    .join(', ');
}
