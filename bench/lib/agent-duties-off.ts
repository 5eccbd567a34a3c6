// A node agent with some of its duties switched off, for measuring what each
// costs its hop (bench/node-agent-replicas.bench.ts). Loaded into an agent's
// process with `--import`, it rewrites the built agent's modules as they
// load; the built files themselves stay as they are. Which duties go is the
// import's query, a comma list of DUTIES or `all`:
//
//   ALT_AGENT_FLAGS="--max-old-space-size=128 --max-semi-space-size=2 --import=./bench/lib/agent-duties-off.ts?off=all" \
//     flock /tmp/warmpool-bench.lock node bench/node-agent-replicas.bench.ts
//
// Such an agent is not one to run anywhere else: it admits every caller and
// bounds nothing. Each rewrite names the exact text it replaces in the built
// module and the agent fails to start when that text is not there (the
// agent's code moved on), so a measurement never runs with a duty silently kept.
import { register } from 'node:module';
import { DUTIES, type DutiesOff } from './agent-duties-off-hooks.ts';

const asked = new URL(import.meta.url).searchParams.get('off') ?? '';
const off = asked === 'all' ? [...DUTIES] : asked.split(',').filter((duty) => duty !== '');
const unknown = off.filter((duty) => !DUTIES.includes(duty));
if (off.length === 0 || unknown.length > 0)
  throw new Error(`agent-duties-off: ?off= takes all or a comma list of ${DUTIES.join(', ')} (got "${asked}")`);

register<DutiesOff>(new URL('./agent-duties-off-hooks.ts', import.meta.url), { data: { off } });
