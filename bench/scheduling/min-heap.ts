/** Completion events ordered by time then job index; stale entries are skipped by the caller. */
export interface TimedEvent {
  at: number;
  job: number;
  attempt: number;
}

export class EventHeap {
  private readonly items: TimedEvent[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): TimedEvent | undefined {
    return this.items[0];
  }

  push(e: TimedEvent): void {
    const items = this.items;
    items.push(e);
    let i = items.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p] as TimedEvent;
      if (!before(e, parent)) break;
      items[i] = parent;
      i = p;
    }
    items[i] = e;
  }

  pop(): TimedEvent | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let i = 0;
    const n = items.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && before(items[r] as TimedEvent, items[l] as TimedEvent) ? r : l;
      const child = items[c] as TimedEvent;
      if (!before(child, last)) break;
      items[i] = child;
      i = c;
    }
    items[i] = last;
    return top;
  }
}

function before(a: TimedEvent, b: TimedEvent): boolean {
  return a.at !== b.at ? a.at < b.at : a.job < b.job;
}
