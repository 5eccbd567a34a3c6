// Reading kubeconfig files: the schema of the parts we use, relative paths made
// absolute against the file's own directory, several files merged the way
// kubectl merges $KUBECONFIG (the first file to name a cluster, user or context
// wins, and the first current-context set wins), and the current context
// resolved to its cluster and user.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { load } from 'js-yaml';
import { z } from 'zod';
import { KubeConfigError } from './kubeconfig.js';

const clusterSchema = z
  .object({
    server: z.string().min(1),
    'certificate-authority': z.string().optional(),
    'certificate-authority-data': z.string().optional(),
    'insecure-skip-tls-verify': z.boolean().optional(),
    'tls-server-name': z.string().optional(),
    'proxy-url': z.string().optional(),
  })
  .loose();

const userSchema = z
  .object({
    token: z.string().optional(),
    /** client-go's spelling; client-node reads `token-file`, accepted too. */
    tokenFile: z.string().optional(),
    'token-file': z.string().optional(),
    'client-certificate': z.string().optional(),
    'client-certificate-data': z.string().optional(),
    'client-key': z.string().optional(),
    'client-key-data': z.string().optional(),
    username: z.string().optional(),
    password: z.string().optional(),
    as: z.string().optional(),
    'as-groups': z.array(z.string()).optional(),
    'as-uid': z.string().optional(),
    'as-user-extra': z.record(z.string(), z.array(z.string())).optional(),
    exec: z.unknown().optional(),
    'auth-provider': z.unknown().optional(),
  })
  .loose();

// A context without a user (`kubectl config set-context c --cluster=x` writes one) is anonymous.
const contextSchema = z
  .object({ cluster: z.string(), user: z.string().optional(), namespace: z.string().optional() })
  .loose();

const fileSchema = z
  .object({
    'current-context': z.string().optional(),
    clusters: z.array(z.object({ name: z.string().min(1), cluster: clusterSchema })).nullish(),
    // `user: {}` (or nothing) is a user with no credentials: the apiserver sees it as anonymous.
    users: z.array(z.object({ name: z.string().min(1), user: userSchema.nullish() })).nullish(),
    contexts: z.array(z.object({ name: z.string().min(1), context: contextSchema })).nullish(),
  })
  .loose();

export type KubeconfigCluster = z.infer<typeof clusterSchema>;
export type KubeconfigUser = z.infer<typeof userSchema>;

/** The current context of one or more kubeconfig files, resolved; every path in it absolute. */
export interface ResolvedContext {
  /** The files it came from, for messages. */
  readonly files: readonly string[];
  readonly contextName: string;
  readonly cluster: KubeconfigCluster;
  readonly user: KubeconfigUser;
  readonly namespace: string | undefined;
}

interface Named<T> {
  name: string;
  value: T;
}

interface ParsedFile {
  currentContext: string | undefined;
  clusters: Named<KubeconfigCluster>[];
  users: Named<KubeconfigUser>[];
  contexts: Named<z.infer<typeof contextSchema>>[];
}

/** Reads `files` (in $KUBECONFIG's order) and resolves their current context; throws KubeConfigError saying why not. */
export function readKubeconfigFiles(files: readonly string[]): ResolvedContext {
  const parsed = files.map(readFile);
  const find = <T>(pick: (file: ParsedFile) => Named<T>[], name: string): T | undefined => {
    for (const file of parsed) {
      const found = pick(file).find((entry) => entry.name === name);
      if (found) return found.value;
    }
    return undefined;
  };
  const where = files.join(':');
  const contextName = parsed.find((file) => file.currentContext)?.currentContext;
  if (contextName === undefined) throw new KubeConfigError(`kubeconfig ${where}: no current-context is set`);
  const context = find((file) => file.contexts, contextName);
  if (context === undefined) throw new KubeConfigError(`kubeconfig ${where}: no context named ${contextName}`);
  const cluster = find((file) => file.clusters, context.cluster);
  if (cluster === undefined)
    throw new KubeConfigError(
      `kubeconfig ${where}: context ${contextName} names cluster ${context.cluster}, not defined`,
    );
  const user = context.user ? find((file) => file.users, context.user) : {};
  if (user === undefined)
    throw new KubeConfigError(`kubeconfig ${where}: context ${contextName} names user ${context.user}, not defined`);
  return { files, contextName, cluster, user, namespace: context.namespace };
}

function readFile(path: string): ParsedFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new KubeConfigError(`cannot read kubeconfig ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let raw: unknown;
  try {
    raw = load(text);
  } catch (error) {
    // js-yaml's message quotes the lines around the error, which may hold a token or a key: never repeat it.
    throw new KubeConfigError(`kubeconfig ${path} is not valid YAML: ${whereInYaml(error)}`);
  }
  const parsed = fileSchema.safeParse(raw ?? {});
  if (!parsed.success) throw new KubeConfigError(`${path} is not a kubeconfig: ${z.prettifyError(parsed.error)}`);
  const base = dirname(path);
  const absolute = (file: string | undefined): string | undefined =>
    file === undefined || file === '' || isAbsolute(file) ? file : resolve(base, file);
  return {
    currentContext: parsed.data['current-context'] || undefined,
    clusters: (parsed.data.clusters ?? []).map(({ name, cluster }) => ({
      name,
      value: { ...cluster, 'certificate-authority': absolute(cluster['certificate-authority']) },
    })),
    users: (parsed.data.users ?? []).map(({ name, user }) => ({
      name,
      value: {
        ...user,
        tokenFile: absolute(user?.tokenFile ?? user?.['token-file']),
        'client-certificate': absolute(user?.['client-certificate']),
        'client-key': absolute(user?.['client-key']),
        exec: withCommandResolved(user?.exec, absolute),
      },
    })),
    contexts: (parsed.data.contexts ?? []).map(({ name, context }) => ({ name, value: context })),
  };
}

/** Where the error is, never what: js-yaml's reason repeats tags and aliases, which may be a password. */
function whereInYaml(error: unknown): string {
  const { mark } = error as { mark?: { line?: unknown; column?: unknown } };
  return typeof mark?.line === 'number' && typeof mark.column === 'number'
    ? `an error at line ${mark.line + 1}, column ${mark.column + 1}`
    : 'an error';
}

/** client-go's rule: an exec command with a path separator in it is relative to the kubeconfig's directory. */
function withCommandResolved(exec: unknown, absolute: (file: string) => string | undefined): unknown {
  if (typeof exec !== 'object' || exec === null) return exec;
  const { command } = exec as { command?: unknown };
  if (typeof command !== 'string' || !command.includes('/')) return exec;
  return { ...exec, command: absolute(command) };
}
