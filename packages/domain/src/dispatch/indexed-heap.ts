/** A binary min-heap whose items remember their slot, so any item can be removed in O(log n). */
export interface HeapItem {
  heapIndex: number;
}

export class IndexedHeap<T extends HeapItem> {
  private readonly items: T[] = [];

  constructor(private readonly less: (a: T, b: T) => boolean) {}

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

  pop(): T | undefined {
    const top = this.items[0];
    if (top) this.remove(top);
    return top;
  }

  /** Removes `item` if it is in this heap; returns whether it was. */
  remove(item: T): boolean {
    const i = item.heapIndex;
    if (i < 0 || this.items[i] !== item) return false;
    const last = this.items.pop() as T;
    item.heapIndex = -1;
    if (last !== item) {
      this.items[i] = last;
      last.heapIndex = i;
      this.down(i);
      this.up(last.heapIndex);
    }
    return true;
  }

  /** Items in heap (not sorted) order; for snapshots, never for picking. */
  values(): readonly T[] {
    return this.items;
  }

  private up(start: number): void {
    let i = start;
    const item = this.items[i] as T;
    while (i > 0) {
      const parentIndex = (i - 1) >> 1;
      const parent = this.items[parentIndex] as T;
      if (!this.less(item, parent)) break;
      this.items[i] = parent;
      parent.heapIndex = i;
      i = parentIndex;
    }
    this.items[i] = item;
    item.heapIndex = i;
  }

  private down(start: number): void {
    let i = start;
    const n = this.items.length;
    const item = this.items[i] as T;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const left = this.items[l] as T;
      const right = this.items[r];
      const child = right !== undefined && this.less(right, left) ? r : l;
      const childItem = this.items[child] as T;
      if (!this.less(childItem, item)) break;
      this.items[i] = childItem;
      childItem.heapIndex = i;
      i = child;
    }
    this.items[i] = item;
    item.heapIndex = i;
  }
}
