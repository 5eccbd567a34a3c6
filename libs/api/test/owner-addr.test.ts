import { describe, expect, it } from 'vitest';
import { ownerAddrOf, type NodeInventory } from '../src/index.js';

function inventory(ownerAddr: unknown): Pick<NodeInventory, 'status'> {
  return { status: { ownerAddr } as NodeInventory['status'] };
}

describe('ownerAddrOf', () => {
  it("reads the node's published owner address", () => {
    expect(ownerAddrOf(inventory('10.0.0.7:9090'))).toBe('10.0.0.7:9090');
    expect(ownerAddrOf(inventory('[fd00::7]:9090'))).toBe('[fd00::7]:9090');
  });

  it('says nothing for an inventory without one, or with one that is not host:port', () => {
    expect(ownerAddrOf(undefined)).toBeUndefined();
    expect(ownerAddrOf({})).toBeUndefined();
    expect(ownerAddrOf(inventory(undefined))).toBeUndefined();
    expect(ownerAddrOf(inventory('10.0.0.7'))).toBeUndefined();
    expect(ownerAddrOf(inventory(''))).toBeUndefined();
    expect(ownerAddrOf(inventory(42))).toBeUndefined();
    expect(ownerAddrOf(inventory(`${'a'.repeat(600)}:1`))).toBeUndefined();
  });
});
