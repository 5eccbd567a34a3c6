import type { ForeignClusterMember } from '@warmpool/api';
import type { CapacityRecord } from './registry.js';

/** One entry of `SandboxEnv.status.clusters`, from a record of `foreignMembers()` (its age left out). */
export function toForeignClusterMember(record: CapacityRecord): ForeignClusterMember {
  return {
    clusterId: record.clusterId,
    memberPool: record.memberPool,
    scalingGroup: record.scalingGroup,
    idle: record.idle,
    running: record.running,
    pending: record.pending,
    desired: record.desired,
    autoscalingEnabled: record.autoscalingEnabled,
    capacity: record.capacity,
  };
}
