// The per-pool settings a real sandboxd takes in PUT /v1/pools besides the
// warm target (cocoonstack/sandbox, docs/sandboxd-api.md): `warm_max`,
// `idle_hibernate_seconds`, `archive_after_seconds`,
// `archive_delete_after_seconds`. Users set them per pool with annotations on
// the SandboxWarmPool (which win) or its SandboxTemplate; the control plane
// pushes them with the pool's target, and the node agent passes them to
// sandboxd (./agent-strict.ts).
//
// To fold into ./sandboxd.ts's poolTargetSchema once the wire schemas there
// move: the three optional non-negative integers (agentPoolTargetSchema).
import type { PoolTarget } from './sandboxd.js';

export const WARM_MAX_ANNOTATION = 'warmpool.dev/warm-max';
export const IDLE_HIBERNATE_ANNOTATION = 'warmpool.dev/idle-hibernate-seconds';
export const ARCHIVE_AFTER_ANNOTATION = 'warmpool.dev/archive-after-seconds';
export const ARCHIVE_DELETE_AFTER_ANNOTATION = 'warmpool.dev/archive-delete-after-seconds';

/** Each annotation and the PUT /v1/pools field it sets. */
export const POOL_OPTION_ANNOTATIONS = {
  warm_max: WARM_MAX_ANNOTATION,
  idle_hibernate_seconds: IDLE_HIBERNATE_ANNOTATION,
  archive_after_seconds: ARCHIVE_AFTER_ANNOTATION,
  archive_delete_after_seconds: ARCHIVE_DELETE_AFTER_ANNOTATION,
} as const;
export type PoolOptionField = keyof typeof POOL_OPTION_ANNOTATIONS;

/** The settings of one pool beyond its target; absent = sandboxd's default. */
export type PoolOptions = Partial<Record<PoolOptionField, number>>;

/** A pool target as warmpool pushes it: sandboxd's key and target, and the options. */
export type AgentPoolTarget = PoolTarget & PoolOptions;

/**
 * A pool's options from its annotations: the SandboxWarmPool's own win over its SandboxTemplate's. An empty value
 * counts as absent. Answers the options, or the problems (annotation, value, why) when a value is not a
 * non-negative integer.
 */
export function poolOptionsOf(
  poolAnnotations: Record<string, string> | undefined,
  templateAnnotations: Record<string, string> | undefined,
): { ok: true; options: PoolOptions } | { ok: false; problems: string[] } {
  const options: PoolOptions = {};
  const problems: string[] = [];
  for (const [field, annotation] of Object.entries(POOL_OPTION_ANNOTATIONS) as Array<[PoolOptionField, string]>) {
    const own = poolAnnotations?.[annotation];
    const raw = own !== undefined && own !== '' ? own : templateAnnotations?.[annotation];
    if (raw === undefined || raw === '') continue;
    const value = /^[0-9]{1,15}$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(value)) {
      problems.push(`annotation ${annotation} ${JSON.stringify(raw)}: must be a non-negative integer`);
      continue;
    }
    options[field] = value;
  }
  if (
    options.archive_after_seconds !== undefined &&
    options.archive_after_seconds > 0 &&
    options.archive_after_seconds <= (options.idle_hibernate_seconds ?? 0)
  )
    problems.push(`annotation ${ARCHIVE_AFTER_ANNOTATION} must be above ${IDLE_HIBERNATE_ANNOTATION}`);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, options };
}
