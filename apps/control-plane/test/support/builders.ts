// Plain objects for in-process specs.
// Re-export kept for branches in flight; import from @warmpool/harness
export { infoOf, inventoryObject, kubeNodeObject, ManualClock, poolObject, templateObject } from '@warmpool/harness';
