// Close steps: closeInOrder runs them one after another, closeTogether all at
// once; in both a step that throws or rejects is logged and skips nothing, and
// the close itself never rejects.
import { describe, expect, it } from 'vitest';
import { closeInOrder, closeTogether, createLogger, type CloseStep, type Logger } from '../src/index.js';

interface Logged {
  level: string;
  step: string;
}

/** A debug logger whose lines (their level and step) are kept in `entries`. */
function recordingLogger(entries: Logged[]): Logger {
  return createLogger('test', {
    level: 'debug',
    write: (line) => {
      const { level, step } = JSON.parse(line) as Logged;
      entries.push({ level, step });
    },
  });
}

/**
 * Resolves once `log` holds `entry`, checked on every turn of the event loop; rejects after 3 s (a step that waits for
 * another never gets there). Not the harness's `eventually`: the harness is built on this library.
 */
async function logged(log: readonly string[], entry: string): Promise<void> {
  const deadline = performance.now() + 3_000;
  while (!log.includes(entry)) {
    if (performance.now() > deadline) throw new Error(`"${entry}" was never logged`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function failingSteps(log: string[]): CloseStep[] {
  return [
    [
      'throws',
      () => {
        throw new Error('thrown');
      },
    ],
    ['rejects', () => Promise.reject(new Error('rejected'))],
    ['closes', () => void log.push('closes closed')],
  ];
}

describe('closeInOrder', () => {
  it('runs each step after the one before has settled', async () => {
    const log: string[] = [];
    await closeInOrder(
      'a server',
      [
        [
          'first',
          async () => {
            log.push('first closing');
            await new Promise((resolve) => setImmediate(resolve));
            log.push('first closed');
          },
        ],
        ['second', () => void log.push('second closing')],
      ],
      recordingLogger([]),
    );
    expect(log).toEqual(['first closing', 'first closed', 'second closing']);
  });

  it('logs a failed step under its name and still runs the rest', async () => {
    const log: string[] = [];
    const entries: Logged[] = [];
    await closeInOrder('a server', failingSteps(log), recordingLogger(entries));
    expect(log).toEqual(['closes closed']);
    const failed = entries.filter((e) => e.level === 'warn').map((e) => e.step);
    expect(failed).toEqual(['throws', 'rejects']);
    const timed = entries.filter((e) => e.level === 'debug').map((e) => e.step);
    expect(timed).toEqual(['throws', 'rejects', 'closes']);
  });
});

describe('closeTogether', () => {
  it('starts every step before any has to settle', async () => {
    const log: string[] = [];
    // Each step ends only once the other has begun: run one after another, neither would end.
    await closeTogether(
      'the leaders',
      [
        [
          'driver',
          async () => {
            log.push('driver closing');
            await logged(log, 'reporter closing');
            log.push('driver closed');
          },
        ],
        [
          'reporter',
          async () => {
            log.push('reporter closing');
            await logged(log, 'driver closing');
            log.push('reporter closed');
          },
        ],
      ],
      recordingLogger([]),
    );
    expect(log.slice(0, 2)).toEqual(['driver closing', 'reporter closing']);
    expect(log.slice(2).sort()).toEqual(['driver closed', 'reporter closed']);
  });

  it('logs a failed step under its name, waits for the rest and never rejects', async () => {
    const log: string[] = [];
    const entries: Logged[] = [];
    await expect(closeTogether('the leaders', failingSteps(log), recordingLogger(entries))).resolves.toBeUndefined();
    expect(log).toEqual(['closes closed']);
    const failed = entries.filter((e) => e.level === 'warn').map((e) => e.step);
    expect(failed.sort()).toEqual(['rejects', 'throws']);
  });
});
