// Kubernetes condition conventions, as apimachinery's meta.SetStatusCondition
// keeps them, for every status the control plane writes.
import type { Condition } from '@warmpool/api';
import { kubeTime } from './kube-time.js';

/** A condition's lastTransitionTime: kept from `previous` (the same type) while its status holds, else now. */
export function transitionTimeOf(previous: Condition | undefined, status: Condition['status'], now: number): string {
  return previous?.status === status && previous.lastTransitionTime !== undefined
    ? previous.lastTransitionTime
    : kubeTime(now);
}
