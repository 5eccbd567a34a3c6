// `POST /runtime/execute`: one command, split as Python's shlex splits it,
// run in the sandbox's workspace under the execution timeout.
import { executeRequestSchema, MAX_COMMAND_OUTPUT_BYTES, MAX_EXECUTE_BODY_BYTES } from '@warmpool/api';
import { readJsonBody } from '@warmpool/runtime';
import { failed, runCommand } from '../core/runtime/commands.js';
import type { SandboxRuntimes } from '../core/runtime/runtimes.js';
import { ShlexError, shlexSplit } from '../core/runtime/shlex.js';
import { refuse, type Served } from './runtime-answers.js';

export function execute(runtimes: SandboxRuntimes): Served {
  return async (c, workspace) => {
    const body = await readJsonBody(c, executeRequestSchema, {
      maxBytes: MAX_EXECUTE_BODY_BYTES,
      invalidMessage: 'body must be {"command": string}',
    });
    if (!body.ok)
      return body.problem === 'too_large'
        ? refuse(c, 413, 'PayloadTooLarge', `an execute body is at most ${MAX_EXECUTE_BODY_BYTES} bytes`)
        : refuse(c, 400, 'InvalidBody', body.error);
    if (body.value.command.trim() === '') return refuse(c, 400, 'InvalidBody', 'command must not be empty');
    let words: string[];
    try {
      words = shlexSplit(body.value.command);
    } catch (err) {
      if (err instanceof ShlexError) return c.json(failed(err.message));
      throw err;
    }
    const result = await runCommand(words, workspace, runtimes.settings.execTimeoutMs);
    const size = Buffer.byteLength(result.stdout) + Buffer.byteLength(result.stderr);
    if (size > MAX_COMMAND_OUTPUT_BYTES)
      return refuse(c, 413, 'OutputTooLarge', `command output is ${size} bytes, over ${MAX_COMMAND_OUTPUT_BYTES}`);
    return c.json(result);
  };
}
