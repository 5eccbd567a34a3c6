// Label and field selectors of list and watch, as the apiserver reads them.
// Labels: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`.
// Fields: `=`, `==`, `!=` on the fields a Sandbox supports (FIELD_LABELS).
import type { Sandbox } from '@warmpool/api';
import { ApiError } from './responses.js';
import type { ServedSandbox } from './sandbox-object.js';

export class SelectorError extends Error {
  override name = 'SelectorError';
}

export type Matcher = (sandbox: Sandbox) => boolean;

const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** The field selectors a Sandbox answers to, and where each reads. */
export const FIELD_LABELS: Record<string, (sandbox: Sandbox) => string> = {
  'metadata.name': (s) => s.metadata.name ?? '',
  'metadata.namespace': (s) => s.metadata.namespace ?? '',
  // Pods select by spec.nodeName; a Sandbox's node is in status, and both names select it.
  'spec.nodeName': (s) => s.status?.nodeName ?? '',
  'status.nodeName': (s) => s.status?.nodeName ?? '',
  'spec.warmPoolRef.name': (s) => s.spec?.warmPoolRef?.name ?? '',
};

export function labelMatcher(selector: string | undefined): Matcher {
  const text = selector?.trim() ?? '';
  if (text === '') return () => true;
  const requirements = splitTopLevel(text).map(parseLabelRequirement);
  return (sandbox) => {
    const labels = sandbox.metadata.labels ?? {};
    return requirements.every((test) => test(labels));
  };
}

export function fieldMatcher(selector: string | undefined): Matcher {
  const text = selector?.trim() ?? '';
  if (text === '') return () => true;
  const tests = text.split(',').map((part): Matcher => {
    const match = /^\s*([A-Za-z0-9.]+)\s*(==|!=|=)\s*([^,]*?)\s*$/.exec(part);
    if (match === null) throw new SelectorError(`invalid field selector: ${JSON.stringify(part)}`);
    const [, field = '', op, value = ''] = match;
    const read = FIELD_LABELS[field];
    if (read === undefined)
      throw new SelectorError(
        `field label not supported: ${field} (supported: ${Object.keys(FIELD_LABELS).join(', ')})`,
      );
    return op === '!=' ? (s) => read(s) !== value : (s) => read(s) === value;
  });
  return (sandbox) => tests.every((test) => test(sandbox));
}

/** Splits on commas outside parentheses. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '(') depth++;
    else if (ch === ')') depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim());
}

function checkKey(key: string, whole: string): string {
  if (!LABEL_KEY.test(key))
    throw new SelectorError(`invalid label selector: ${JSON.stringify(whole)} (bad key ${JSON.stringify(key)})`);
  return key;
}

function parseLabelRequirement(part: string): (labels: Record<string, string>) => boolean {
  let match = /^([^\s!=()]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part);
  if (match !== null) {
    const key = checkKey(match[1] ?? '', part);
    const values = new Set(
      (match[3] ?? '')
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== ''),
    );
    return match[2] === 'in'
      ? (l) => l[key] !== undefined && values.has(l[key])
      : (l) => l[key] === undefined || !values.has(l[key]);
  }
  match = /^([^\s!=()]+)\s*(==|!=|=)\s*([^\s!=()]*)$/.exec(part);
  if (match !== null) {
    const key = checkKey(match[1] ?? '', part);
    const value = match[3] ?? '';
    return match[2] === '!=' ? (l) => l[key] !== value : (l) => l[key] === value;
  }
  match = /^(!?)([^\s!=()]+)$/.exec(part);
  if (match !== null) {
    const key = checkKey(match[2] ?? '', part);
    return match[1] === '!' ? (l) => l[key] === undefined : (l) => l[key] !== undefined;
  }
  throw new SelectorError(`invalid label selector: ${JSON.stringify(part)}`);
}

/**
 * A list's or watch's selectors over a served Sandbox (a bad one is 400 BadRequest); without selectors the object is
 * not even built.
 */
export function selectionOf(query: {
  labelSelector: string | undefined;
  fieldSelector: string | undefined;
}): (served: ServedSandbox) => boolean {
  const labelSelector = query.labelSelector ?? '';
  const fieldSelector = query.fieldSelector ?? '';
  if (labelSelector.trim() === '' && fieldSelector.trim() === '') return () => true;
  try {
    const labels = labelMatcher(labelSelector);
    const fields = fieldMatcher(fieldSelector);
    return (served) => {
      const sandbox = served.object;
      return labels(sandbox) && fields(sandbox);
    };
  } catch (err) {
    if (err instanceof SelectorError) throw new ApiError('BadRequest', err.message);
    throw err;
  }
}
