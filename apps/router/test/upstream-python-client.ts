// The requests upstream's Python client (kubernetes-sigs/agent-sandbox,
// clients/python/agentic-sandbox-client/k8s_agent_sandbox) sends, byte for
// byte where it matters, since its code cannot be vendored here:
// - connector.py SandboxConnector.send_request: `{base}/{endpoint}` with
//   X-Sandbox-ID (the Sandbox's name), X-Sandbox-Namespace, X-Sandbox-Port
//   (server_port, 8888 by default) and X-Sandbox-Timeout (its timeout, 60 by
//   default), no Authorization header, redirects refused;
// - commands/command_executor.py run: POST execute, json={"command": ...};
// - files/filesystem.py: write → POST upload, multipart field `file` whose
//   filename is the path; read → GET download/{quote(path, safe='')};
//   list → GET list/{...}; exists → GET exists/{...};
// - k8s_helper.py create_sandbox_claim: the SandboxClaim manifest.

export interface UpstreamConnection {
  /** What the client's api_url (or port-forward) points at: the router. */
  baseUrl: string;
  sandboxId: string;
  namespace: string;
  serverPort?: number;
  /** Only when the caller adds one (the Python client never does); sent as Bearer. */
  token?: string;
}

/** Python's urllib.parse.quote(path, safe=''): everything but unreserved characters is percent-encoded. */
export function pythonQuote(path: string): string {
  return Array.from(new TextEncoder().encode(path), (b) => {
    const c = String.fromCharCode(b);
    return /[A-Za-z0-9_.~-]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }).join('');
}

/** send_request's headers. */
export function routerHeaders(conn: UpstreamConnection, timeoutSeconds = 60): Record<string, string> {
  return {
    'user-agent': 'python-requests/2.32.3',
    accept: '*/*',
    'x-sandbox-id': conn.sandboxId,
    'x-sandbox-namespace': conn.namespace,
    'x-sandbox-port': String(conn.serverPort ?? 8888),
    'x-sandbox-timeout': String(timeoutSeconds),
    ...(conn.token !== undefined ? { authorization: `Bearer ${conn.token}` } : {}),
  };
}

function send(conn: UpstreamConnection, method: string, endpoint: string, init: RequestInit = {}): Promise<Response> {
  const headers = { ...routerHeaders(conn), ...(init.headers as Record<string, string> | undefined) };
  return fetch(`${conn.baseUrl.replace(/\/$/, '')}/${endpoint}`, { ...init, method, headers, redirect: 'manual' });
}

/** `commands.run(command)`: Python's json.dumps separators included. */
export function run(conn: UpstreamConnection, command: string): Promise<Response> {
  return send(conn, 'POST', 'execute', {
    headers: { 'content-type': 'application/json' },
    body: `{"command": ${JSON.stringify(command)}}`,
  });
}

/** `files.write(path, content)`: requests' multipart encoding of files={'file': (path, content)}. */
export function write(conn: UpstreamConnection, path: string, content: string | Uint8Array): Promise<Response> {
  const boundary = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join(
    '',
  );
  const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content;
  const head = new TextEncoder().encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${path}"\r\n\r\n`,
  );
  const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
  const body = new Uint8Array(head.length + bytes.length + tail.length);
  body.set(head, 0);
  body.set(bytes, head.length);
  body.set(tail, head.length + bytes.length);
  return send(conn, 'POST', 'upload', {
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body,
  });
}

export function read(conn: UpstreamConnection, path: string): Promise<Response> {
  return send(conn, 'GET', `download/${pythonQuote(path)}`);
}

export function list(conn: UpstreamConnection, path: string): Promise<Response> {
  return send(conn, 'GET', `list/${pythonQuote(path)}`);
}

export function exists(conn: UpstreamConnection, path: string): Promise<Response> {
  return send(conn, 'GET', `exists/${pythonQuote(path)}`);
}

/** `SandboxClient.create_sandbox`'s claim (k8s_helper.create_sandbox_claim), optionally with a lifecycle. */
export function sandboxClaimManifest(
  name: string,
  namespace: string,
  warmpool: string,
  lifecycle?: { shutdownTime: string; shutdownPolicy: 'Delete' | 'Retain' },
): string {
  return JSON.stringify({
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: {
      name,
      namespace,
      annotations: { 'agents.x-k8s.io/client-first-requested-at': new Date().toISOString() },
      labels: { 'agents.x-k8s.io/created-by': 'python-client' },
    },
    spec: { warmPoolRef: { name: warmpool }, ...(lifecycle !== undefined ? { lifecycle } : {}) },
  });
}
