// Every failure of a call to a node agent is an AgentCallError; the few the
// callers tell apart are subclasses of it.

/** A call that got no usable answer. `status` is the HTTP status when there was one. */
export class AgentCallError extends Error {
  override name = 'AgentCallError';
  /** The node (or, where the caller knows only that, the agent's address). */
  readonly node: string;
  readonly status: number | undefined;
  /** Worth another attempt: network errors, timeouts, 5xx, 429. */
  readonly retriable: boolean;

  constructor(node: string, message: string, options: { status?: number; retriable?: boolean; cause?: unknown } = {}) {
    super(`node ${node}: ${message}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.node = node;
    this.status = options.status;
    this.retriable = options.retriable ?? false;
  }
}

/** The agent has applied a later generation than the one pushed (409): nothing changed on the node. */
export class StaleGenerationError extends AgentCallError {
  override name = 'StaleGenerationError';
  readonly appliedGeneration: number;

  constructor(node: string, generation: number, appliedGeneration: number) {
    super(node, `refused generation ${generation}: it has applied ${appliedGeneration}`, { status: 409 });
    this.appliedGeneration = appliedGeneration;
  }
}

/** The caller no longer leads (CallOptions.proceed said so): nothing was sent. */
export class NotLeadingError extends AgentCallError {
  override name = 'NotLeadingError';

  constructor(node: string) {
    super(node, 'not leading: nothing pushed');
  }
}

/** No fleet token: warmpool is fail-closed and never calls an agent unauthenticated. */
export class NoTokenError extends AgentCallError {
  override name = 'NoTokenError';

  constructor(node: string) {
    super(node, 'no fleet token configured: not calling node agents unauthenticated (fail-closed)');
  }
}
