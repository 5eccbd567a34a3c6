export { startCluster, DEFAULT_CRDS_DIR } from './cluster.js';
export type { StartClusterOptions, TestCluster, ClusterTimings } from './cluster.js';
export { runKubectl } from './kubectl.js';
export type { KubectlOptions, KubectlResult } from './kubectl.js';
export { runHelm } from './helm.js';
export type { HelmOptions } from './helm.js';
export { commandStats as redisCommandStats, startRedis, ping as redisPing } from './redis.js';
export type { RedisTls, StartRedisOptions, TestRedis } from './redis.js';
export { startSentinelTopology } from './redis-sentinel.js';
export type { SentinelAddress, StartSentinelOptions, TestSentinelTopology } from './redis-sentinel.js';
export { fieldsOf, infoFields, respCommand, RespError } from './resp.js';
export type { RespTarget, RespValue } from './resp.js';
export { apiserverArgs, SERVICE_ACCOUNT_ISSUER, SERVICE_CLUSTER_IP_RANGE } from './apiserver.js';
export { etcdArgs } from './etcd.js';
export { binDir, ensureKubeBinaries, findBinary, findOnPath } from './binaries.js';
export type { KubeBinary } from './binaries.js';
export { createClusterPki, issueCertificate, generateKeyPair } from './pki.js';
export type { ClusterPki, IssuedCertificate, KeyPair, CertificateRequest } from './pki.js';
export { addressInUse, canListen, freePort, freePorts, quietPort } from './ports.js';
export {
  forgetRemoveAtExit,
  isAlive,
  leaveSignalsToCaller,
  ManagedChild,
  NodeScript,
  processGroupMembers,
  removeAtExit,
  runCommand,
  stopScripts,
} from './children.js';
export type { ChildExit, ChildOptions, LoggedOptions, NodeScriptOptions, RunOptions, RunResult } from './children.js';
export { etcdKeyCount } from './etcd-keys.js';
export type { TlsClientAuth } from './http.js';
export { startStack, APP_ENTRYPOINTS, DEFAULT_STACK_DIR, REPO_ROOT } from './stack.js';
export type {
  LocalStack,
  StackDescription,
  StackNode,
  StackSample,
  StackSampleOptions,
  StartStackOptions,
  UnexpectedExit,
} from './stack.js';
export { allPoolsReady, progressLine, readNode, readPools, readProgress } from './stack-status.js';
export type { NodeProgress, PoolProgress, ProgressSource, StackProgress } from './stack-status.js';
export {
  appliedInfoOf,
  federationRecord,
  infoOf,
  inventoryObject,
  kubeNodeObject,
  listManifest,
  poolObject,
  sandboxClaim,
  sandboxEnv,
  template,
  templateObject,
  warmPool,
} from './objects.js';
export type { InventoryOptions, MemberRecord, Named, SandboxClaimOptions, TemplateOptions } from './objects.js';
export {
  nodeObject,
  sampleManifest,
  samplePool,
  sampleTemplate,
  SAMPLE_IMAGE,
  SAMPLE_NAME,
  SAMPLE_REPLICAS,
} from './stack-manifests.js';
export { preferredOrFreePort } from './stack-ports.js';
export { Freezer, freezeProcess, thawProcess } from './freeze.js';
export { eventually, sleep } from './wait.js';
export type { EventuallyOptions } from './wait.js';
export { ManualClock } from './manual-clock.js';
export { InFlight } from './in-flight.js';
export type { QuietOptions } from './in-flight.js';
export { httpCall, postDeclaringOnly } from './http-call.js';
export type { HttpAnswer, HttpCallOptions } from './http-call.js';
export { tearDown } from './teardown.js';
export type { TeardownStep } from './teardown.js';
export { ensureFaketime, type FaketimeLookup } from './faketime.js';
export { startFederatedStacks, type FederatedStacks } from './stack-federation.js';
export { writeFederationPeers, type FederationMember } from './federation-peers.js';
export { deleteCrd, registerAggregatedApi } from './aggregation.js';
export type { AggregatedApiOptions } from './aggregation.js';
export { startSandboxdVariant } from './sandboxd-variant.js';
export type { SandboxdVariant, SandboxdVariantBehaviour } from './sandboxd-variant.js';
export { startNodeCluster } from './nodes/node-cluster.js';
export type { NodeCluster, NodeClusterTimings, StartNodeClusterOptions } from './nodes/node-cluster.js';
export { CLUSTER_RANGES } from './nodes/machine-state.js';
export { LOCAL_CHART_VALUES, PAUSE_IMAGE } from './nodes/configs.js';
