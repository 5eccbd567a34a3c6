// Starting a component inside the cluster's network namespace behind the
// harness's watchdog (it dies with the test process; the guardian does the rest).
import { join } from 'node:path';
import { ManagedChild } from '../children.js';
import type { ClusterNamespace } from './namespace.js';

export function startInside(
  ns: ClusterNamespace,
  logDir: string,
  name: string,
  command: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
): ManagedChild {
  const [nsenter = 'nsenter', ...prefix] = ns.enter;
  return new ManagedChild({
    name,
    command: nsenter,
    args: [...prefix, command, ...args],
    logFile: join(logDir, `${name}.log`),
    ...(env === undefined ? {} : { env }),
  });
}
