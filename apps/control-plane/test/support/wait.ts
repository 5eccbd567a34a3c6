// Re-export kept for branches in flight; import from @warmpool/harness
export { eventually, sleep as delay } from '@warmpool/harness';
