import type { KubeNode, KubePod } from '@warmpool/api';
import { describe, expect, it } from 'vitest';
import { addressCheckOf, slimNode } from '../../src/nodes/addresses.js';

function node(name: string, ...addresses: string[]): KubeNode {
  return {
    metadata: { name },
    status: { addresses: addresses.map((address, i) => ({ type: i === 0 ? 'InternalIP' : 'Hostname', address })) },
  };
}

function pod(nodeName: string, ip: string, extra: { phase?: string; deleting?: boolean } = {}): KubePod {
  return {
    metadata: {
      name: `agent-${nodeName}`,
      namespace: 'warmpool-system',
      ...(extra.deleting ? { deletionTimestamp: '2030-01-01T00:00:00Z' } : {}),
    },
    spec: { nodeName },
    status: { phase: extra.phase ?? 'Running', podIP: ip, podIPs: [{ ip }] },
  };
}

describe("whether an agent address is its node's", () => {
  const nodes = new Map([
    ['a', node('a', '10.0.0.1', 'a.example')],
    ['b', node('b', '10.0.0.2')],
  ]);
  const check = addressCheckOf({ node: (name) => nodes.get(name) });

  it("accepts a host among the Node's status.addresses (IP or hostname, any case)", () => {
    expect(check('a', '10.0.0.1:7443')).toBeUndefined();
    expect(check('a', 'A.Example:7443')).toBeUndefined();
  });

  it("refuses another node's address, an unknown one, and an address of a node that does not exist, saying why", () => {
    expect(check('a', '10.0.0.2:7443')).toBe("10.0.0.2 is not one of Node a's addresses (10.0.0.1, a.example)");
    expect(check('a', '127.0.9.9:7443')).toContain("127.0.9.9 is not one of Node a's addresses");
    expect(check('ghost', '10.0.0.1:7443')).toBe('there is no Node named ghost to vouch for 10.0.0.1');
    expect(check('a', 'nonsense')).toContain('is not HOST:PORT');
  });

  it("with the agents' pods: accepts the IP of a live agent pod on that node, and no other pod's", () => {
    const pods = [
      pod('a', '192.168.1.10'),
      pod('b', '192.168.2.10'),
      pod('a', '192.168.1.99', { phase: 'Failed' }),
      pod('a', '192.168.1.77', { deleting: true }),
    ];
    const withPods = addressCheckOf({ node: (name) => nodes.get(name), agentPods: () => pods });
    expect(withPods('a', '192.168.1.10:7443')).toBeUndefined();
    expect(withPods('a', '10.0.0.1:7443')).toBeUndefined();
    expect(withPods('a', '192.168.2.10:7443')).toBe(
      "192.168.2.10 is not one of Node a's addresses (10.0.0.1, a.example) nor the IP of a node-agent pod on it",
    );
    expect(withPods('a', '192.168.1.99:7443')).toBeDefined();
    expect(withPods('a', '192.168.1.77:7443')).toBeDefined();
  });

  it('caches Nodes cut down to their name and addresses', () => {
    const big = {
      ...node('a', '10.0.0.1'),
      spec: { podCIDR: '10.1.0.0/24' },
      status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }], images: [{ names: ['x'], sizeBytes: 1 }] },
    } as KubeNode;
    expect(slimNode(big)).toEqual({
      metadata: { name: 'a' },
      status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
    });
  });
});
