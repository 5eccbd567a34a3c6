export { KubeConfigError } from './kubeconfig.js';
export type { KubeCluster, KubeConfig } from './kubeconfig.js';
export { loadKubeConfig } from './load.js';
