// A min-heap on `deadline` whose items remember their own slot, so a renew or
// release re-positions or removes an item in O(log n) and the heap never holds
// stale entries. The node then needs one timer, for the earliest deadline,
// however many claims it holds.

export interface HeapItem {
  deadline: number;
  /** Slot in the heap; -1 when not in it. Owned by the heap. */
  heapIndex: number;
}

export class DeadlineHeap<T extends HeapItem> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    item.heapIndex = this.items.length;
    this.items.push(item);
    this.up(item.heapIndex);
  }

  /** Re-position an item whose deadline changed. */
  update(item: T): void {
    if (item.heapIndex < 0) return;
    this.up(item.heapIndex);
    this.down(item.heapIndex);
  }

  remove(item: T): void {
    const index = item.heapIndex;
    if (index < 0) return;
    const last = this.items.pop() as T;
    item.heapIndex = -1;
    if (last !== item) {
      this.items[index] = last;
      last.heapIndex = index;
      this.up(index);
      this.down(last.heapIndex);
    }
  }

  /** Remove and return the item with the earliest deadline if it is due at `now`. */
  popDue(now: number): T | undefined {
    const top = this.items[0];
    if (top === undefined || top.deadline > now) return undefined;
    this.remove(top);
    return top;
  }

  clear(): void {
    for (const item of this.items) item.heapIndex = -1;
    this.items.length = 0;
  }

  private up(index: number): void {
    const items = this.items;
    const item = items[index] as T;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = items[parentIndex] as T;
      if (parent.deadline <= item.deadline) break;
      items[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    items[index] = item;
    item.heapIndex = index;
  }

  private down(index: number): void {
    const items = this.items;
    const length = items.length;
    const item = items[index] as T;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      let child = left;
      if (right < length && (items[right] as T).deadline < (items[left] as T).deadline) child = right;
      const childItem = items[child] as T;
      if (childItem.deadline >= item.deadline) break;
      items[index] = childItem;
      childItem.heapIndex = index;
      index = child;
    }
    items[index] = item;
    item.heapIndex = index;
  }
}
