#!/usr/bin/env node
// The node cluster's guardian: a detached process (its own session, so a kill
// of the test's process group misses it) that waits for the cluster's owner to
// end and, if the owner did not clean up (SIGKILL, a crash), does it.
//
//   node guardian-main.js <state-file>
import { existsSync } from 'node:fs';
import { cleanUpCluster } from './cleanup.js';
import { processStart, readClusterState } from './machine-state.js';

const file = process.argv[2];
if (file === undefined) {
  console.error('usage: guardian-main.js <state-file>');
  process.exit(2);
}
const first = readClusterState(file);
if (first === undefined) process.exit(0);

const timer = setInterval(() => {
  // The owner removes the file once it has cleaned up itself.
  if (!existsSync(file)) {
    clearInterval(timer);
    return;
  }
  if (processStart(first.ownerPid) === first.ownerStart) return;
  clearInterval(timer);
  const state = readClusterState(file) ?? first;
  console.error(`warmpool nodes guardian: owner ${state.ownerPid} is gone; cleaning up cluster ${state.id}`);
  cleanUpCluster(state);
}, 500);
