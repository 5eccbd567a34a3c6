// One Redis command over a fresh socket (RESP2), for the harness's readiness
// and topology checks: the harness does not depend on a Redis client library,
// and a check must not share a connection with the code under test.
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';

export type RespValue = string | number | null | RespValue[] | RespError;

/** An error reply (`-ERR …`, `-NOAUTH …`), returned rather than thrown so a check can read it. */
export class RespError {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

export interface RespTarget {
  host: string;
  port: number;
  /** AUTH with this password first (its reply is not returned). */
  password?: string;
  /** Connect with TLS, trusting this CA (PEM). */
  tlsCa?: string;
}

/**
 * Sends `args` (after AUTH when a password is given) and returns the reply.
 * Rejects when the connection fails or `timeoutMs` passes.
 */
export function respCommand(target: RespTarget, args: readonly string[], timeoutMs = 1_000): Promise<RespValue> {
  return new Promise((resolve, reject) => {
    const socket: Socket =
      target.tlsCa !== undefined
        ? connectTls({ host: target.host, port: target.port, ca: target.tlsCa })
        : connectTcp({ host: target.host, port: target.port });
    const commands = [...(target.password !== undefined ? [['AUTH', target.password]] : []), args];
    let buffer = Buffer.alloc(0);
    let replies: RespValue[] = [];
    const finish = (error: Error | undefined): void => {
      socket.destroy();
      if (error !== undefined) reject(error);
      else resolve(replies.at(-1) ?? null);
    };
    socket.setTimeout(timeoutMs, () =>
      finish(new Error(`no answer from ${target.host}:${target.port} within ${timeoutMs} ms`)),
    );
    socket.on('error', (err) => finish(err));
    socket.on('close', () => finish(new Error(`${target.host}:${target.port} closed the connection before answering`)));
    socket.on(target.tlsCa !== undefined ? 'secureConnect' : 'connect', () => socket.write(encode(commands)));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const parsed: RespValue[] = [];
      let offset = 0;
      try {
        for (;;) {
          const next = parseReply(buffer, offset);
          if (next === undefined) break;
          parsed.push(next.value);
          offset = next.end;
        }
      } catch (err) {
        finish(err as Error);
        return;
      }
      if (parsed.length < commands.length) return; // wait for the rest
      replies = parsed;
      const auth = target.password !== undefined ? replies[0] : undefined;
      if (auth instanceof RespError)
        finish(new Error(`AUTH refused by ${target.host}:${target.port}: ${auth.message}`));
      else finish(undefined);
    });
  });
}

function encode(commands: ReadonlyArray<readonly string[]>): string {
  return commands
    .map((args) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`)
    .join('');
}

/** One reply starting at `offset`, or undefined while it is incomplete. */
function parseReply(buffer: Buffer, offset: number): { value: RespValue; end: number } | undefined {
  const lineEnd = buffer.indexOf('\r\n', offset);
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(buffer[offset] ?? 0);
  const line = buffer.toString('utf8', offset + 1, lineEnd);
  const after = lineEnd + 2;
  switch (type) {
    case '+':
      return { value: line, end: after };
    case '-':
      return { value: new RespError(line), end: after };
    case ':':
      return { value: Number(line), end: after };
    case '$': {
      const length = Number(line);
      if (length < 0) return { value: null, end: after };
      if (buffer.length < after + length + 2) return undefined;
      return { value: buffer.toString('utf8', after, after + length), end: after + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: after };
      const items: RespValue[] = [];
      let end = after;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buffer, end);
        if (item === undefined) return undefined;
        items.push(item.value);
        end = item.end;
      }
      return { value: items, end };
    }
    default:
      throw new Error(`unexpected RESP reply type ${JSON.stringify(type)}`);
  }
}

/** A flat [field, value, field, value, …] reply (SENTINEL MASTER) as a record. */
export function fieldsOf(reply: RespValue): Record<string, string> {
  const fields: Record<string, string> = {};
  if (!Array.isArray(reply)) return fields;
  for (let i = 0; i + 1 < reply.length; i += 2) {
    const [field, value] = [reply[i], reply[i + 1]];
    if (typeof field === 'string' && typeof value === 'string') fields[field] = value;
  }
  return fields;
}

/** An INFO section's `field:value` lines as a record. */
export function infoFields(reply: RespValue): Record<string, string> {
  const fields: Record<string, string> = {};
  if (typeof reply !== 'string') return fields;
  for (const line of reply.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}
