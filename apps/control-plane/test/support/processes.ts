// Re-export kept for branches in flight; import from @warmpool/harness
export { NodeScript as Proc, stopScripts as stopAll } from '@warmpool/harness';
