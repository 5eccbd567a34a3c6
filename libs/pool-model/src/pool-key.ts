// A SandboxTemplate names a sandboxd pool by (template, net, size)
// (docs/crds.md, "SandboxTemplate"): the first container's image, and two annotations.
import {
  DEFAULT_NET,
  DEFAULT_SIZE,
  DRIVER_ANNOTATION,
  DRIVER_SANDBOXD,
  isPoolNet,
  isPoolSize,
  NET_ANNOTATION,
  POOL_NETS,
  POOL_SIZES,
  SIZE_ANNOTATION,
  poolKeySchema,
  type PoolKey,
  type SandboxTemplate,
} from '@warmpool/api';

/** A SandboxTemplate that cannot name a sandboxd pool. The controller reports it on the pool instead of driving it. */
export class TemplateKeyError extends Error {
  /** `namespace/name` of the template, or `(unnamed)`. */
  readonly template: string;

  constructor(template: string, reason: string) {
    super(`SandboxTemplate ${template}: ${reason}`);
    this.name = 'TemplateKeyError';
    this.template = template;
  }
}

function templateName(template: SandboxTemplate): string {
  const { namespace, name } = template.metadata ?? {};
  if (name === undefined) return '(unnamed)';
  return namespace === undefined ? name : `${namespace}/${name}`;
}

/**
 * The template object's own annotation wins; the pod template's is the
 * fallback, because people often put pod-ish settings on the pod template.
 * An empty value counts as absent so `net: ""` falls back to the default.
 */
function annotation(template: SandboxTemplate, key: string): string | undefined {
  const own = template.metadata?.annotations?.[key];
  if (own !== undefined && own !== '') return own;
  const fromPod = template.spec?.podTemplate?.metadata?.annotations?.[key];
  if (fromPod !== undefined && fromPod !== '') return fromPod;
  return undefined;
}

/**
 * Whether warmpool drives pools of this template (`warmpool.dev/driver: sandboxd`); every other template is left to
 * upstream.
 */
export function isDriven(template: SandboxTemplate): boolean {
  return annotation(template, DRIVER_ANNOTATION) === DRIVER_SANDBOXD;
}

// What JSON.stringify leaves as is but a reason must not carry: the reason
// lands in a status condition and in logs, where these would hide or spoof text.
const UNSAFE_IN_REASON = /[\p{Cc}\p{Cf}\p{Co}\p{Z}]/gu;

function escapeUnits(char: string): string {
  let escaped = '';
  for (let i = 0; i < char.length; i++) escaped += `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return escaped;
}

/**
 * A value quoted for a reason, every non-printable character escaped (JSON.stringify already escapes lone surrogates).
 */
function quoted(value: string | undefined): string {
  return JSON.stringify(value ?? '').replace(UNSAFE_IN_REASON, (char) => (char === ' ' ? char : escapeUnits(char)));
}

/**
 * The sandboxd pool key of a template. Throws TemplateKeyError when the
 * template has no container image, an annotation is not a valid key part, or
 * `net` / `size` is outside sandboxd's closed sets (libs/api
 * pool-key-vocabulary: a node would refuse the whole PUT for it).
 */
export function poolKeyOf(template: SandboxTemplate): PoolKey {
  const name = templateName(template);
  const containers = template.spec?.podTemplate?.spec?.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    throw new TemplateKeyError(
      name,
      "spec.podTemplate.spec.containers is empty: the first container's image names the pool",
    );
  }
  const image = containers[0]?.image;
  if (typeof image !== 'string' || image.trim() === '') {
    const container = containers[0]?.name ?? '0';
    throw new TemplateKeyError(
      name,
      `container "${container}" (spec.podTemplate.spec.containers[0]) has no image: the first container's image names the pool`,
    );
  }
  const candidate = {
    template: image,
    net: annotation(template, NET_ANNOTATION) ?? DEFAULT_NET,
    size: annotation(template, SIZE_ANNOTATION) ?? DEFAULT_SIZE,
  };
  const parsed = poolKeySchema.safeParse(candidate);
  if (!parsed.success) {
    const where: Record<string, string> = {
      template: 'image',
      net: `annotation ${NET_ANNOTATION}`,
      size: `annotation ${SIZE_ANNOTATION}`,
    };
    const problems = parsed.error.issues.map((issue) => {
      const field = String(issue.path[0] ?? '');
      const value = (candidate as Record<string, string>)[field];
      return `${where[field] ?? field} ${quoted(value)}: ${issue.message}`;
    });
    throw new TemplateKeyError(name, problems.join('; '));
  }
  const closed: string[] = [];
  if (!isPoolNet(parsed.data.net))
    closed.push(`annotation ${NET_ANNOTATION} ${quoted(parsed.data.net)}: must be one of ${POOL_NETS.join(', ')}`);
  if (!isPoolSize(parsed.data.size))
    closed.push(`annotation ${SIZE_ANNOTATION} ${quoted(parsed.data.size)}: must be one of ${POOL_SIZES.join(', ')}`);
  if (closed.length > 0) throw new TemplateKeyError(name, closed.join('; '));
  return parsed.data;
}
