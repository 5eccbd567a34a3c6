// A command line split into words the way upstream's runtime splits it
// (Python's shlex.split, POSIX mode): whitespace separates words, single
// quotes keep everything literally, double quotes keep everything but the
// backslash escapes of `"`, `\`, `$` and a backquote, and a backslash outside
// quotes escapes the next character. No variables, globs, pipes or
// redirections: upstream's runtime runs the words without a shell, and so
// does the simulation.

export class ShlexError extends Error {
  override name = 'ShlexError';
}

const DOUBLE_QUOTE_ESCAPES = new Set(['"', '\\', '$', '`']);

export function shlexSplit(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const ch = line[i] ?? '';
    if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
      continue;
    }
    inWord = true;
    if (ch === "'") {
      const end = line.indexOf("'", i + 1);
      if (end === -1) throw new ShlexError('No closing quotation');
      word += line.slice(i + 1, end);
      i = end + 1;
    } else if (ch === '"') {
      i++;
      for (;;) {
        if (i >= line.length) throw new ShlexError('No closing quotation');
        const c = line[i] ?? '';
        if (c === '"') break;
        const next = line[i + 1];
        if (c === '\\' && next !== undefined && DOUBLE_QUOTE_ESCAPES.has(next)) {
          word += next;
          i += 2;
        } else {
          word += c;
          i++;
        }
      }
      i++;
    } else if (ch === '\\') {
      const next = line[i + 1];
      if (next === undefined) throw new ShlexError('No escaped character');
      word += next;
      i += 2;
    } else {
      word += ch;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}
