// A ServiceAccount that may claim (create/get/update/delete sandboxclaims in
// `default`), and a bearer token for it, as a user would set one up with
// kubectl: what every claim-API benchmark authenticates with.

export type Kubectl = (args: string[]) => Promise<string>;

/** Creates ServiceAccount `bench` with the claim verbs in `default`; answers a one-hour token. */
export async function claimantToken(kubectl: Kubectl): Promise<string> {
  await kubectl(['create', 'serviceaccount', 'bench', '-n', 'default']);
  await kubectl([
    'create',
    'role',
    'bench-claims',
    '-n',
    'default',
    '--verb=create,get,update,delete',
    '--resource=sandboxclaims.extensions.agents.x-k8s.io',
  ]);
  await kubectl([
    'create',
    'rolebinding',
    'bench-claims',
    '-n',
    'default',
    '--role=bench-claims',
    '--serviceaccount=default:bench',
  ]);
  return (await kubectl(['create', 'token', 'bench', '-n', 'default', '--duration=1h'])).trim();
}
