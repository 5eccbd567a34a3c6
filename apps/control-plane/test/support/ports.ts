// Re-export kept for branches in flight; import from @warmpool/harness
export { addressInUse, quietPort } from '@warmpool/harness';
