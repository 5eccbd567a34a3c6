// The Node.js flags the Helm chart runs each component with (`<component>.nodeFlags`
// in charts/warmpool/values.yaml, given on node's command line), read from the
// chart so a benchmark's process is the process the pod runs; and the flags a
// benchmark's environment variable adds or puts in their place.
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';

export type ChartComponent = 'controlPlane' | 'nodeAgent' | 'router';

export function chartNodeFlags(component: ChartComponent): string[] {
  const values = load(readFileSync(new URL('../../charts/warmpool/values.yaml', import.meta.url), 'utf8')) as Record<
    string,
    { nodeFlags?: unknown } | undefined
  >;
  const flags = values[component]?.nodeFlags;
  if (!Array.isArray(flags) || !flags.every((flag) => typeof flag === 'string'))
    throw new Error(`charts/warmpool/values.yaml: ${component}.nodeFlags is not a list of strings`);
  return flags;
}

/** The whitespace-separated flags in environment variable `name`; undefined when it is not set (set and empty: none). */
export function flagsFromEnv(name: string): string[] | undefined {
  return process.env[name]?.split(/\s+/).filter(Boolean);
}
