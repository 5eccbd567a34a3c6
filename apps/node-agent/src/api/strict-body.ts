// Bodies the agent refuses: a field warmpool does not support answers 400
// `UnsupportedField` naming it (never silently dropped: the caller would
// believe sandboxd got it), any other schema failure 400 `BadRequest` with the
// first problem and where it is.
import { INVALID_BODY_MESSAGE, unsupportedFieldsIn } from '@warmpool/api';
import { describeIssue, type BodySchema } from '@warmpool/runtime';
import type { z } from 'zod';
import { errorReply, type Reply } from './responses.js';

/** Takes any JSON: the route's own schema judges it (so the refusal can say which fields are unsupported). */
export const ANY_JSON: BodySchema<unknown> = { safeParse: (value) => ({ success: true, data: value }) };

/** The 400 for a body the schema refused. */
export function refusalOf(error: z.ZodError): Reply {
  const unsupported = unsupportedFieldsIn(error);
  if (unsupported !== undefined) {
    const { path, fields } = unsupported;
    const names = fields.map((f) => (path === '' ? f : `${path}.${f}`)).join(', ');
    return errorReply(
      400,
      'UnsupportedField',
      `unsupported field${fields.length === 1 ? '' : 's'} ${names}: warmpool does not support ${
        fields.length === 1 ? 'it' : 'them'
      } (refused, never dropped)`,
      { fields },
    );
  }
  return errorReply(400, 'BadRequest', describeIssue(error, INVALID_BODY_MESSAGE));
}

/** `json` judged by `schema`: its value, or the 400. */
export function parseBody<T>(
  schema: BodySchema<T>,
  json: unknown,
): { ok: true; value: T } | { ok: false; reply: Reply } {
  const parsed = schema.safeParse(json);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, reply: refusalOf(parsed.error) };
}
