// Lays a job graph out in columns: a job sits one column right of the deepest job it needs, so
// every edge points rightwards and the columns read in execution order.

export interface GraphJob {
  id: string;
  index: number;
  /** Names of the jobs this one needs (as the run API reports them). */
  needs: string[];
  name: string;
}

export interface GraphLayout {
  columns: string[][];
  /** Edges as [fromId, toId]. */
  edges: [string, string][];
  position: Map<string, { column: number; row: number }>;
}

export function layoutJobGraph(jobs: readonly GraphJob[]): GraphLayout {
  const byName = new Map(jobs.map((j) => [j.name, j]));
  const level = new Map<string, number>();
  const visiting = new Set<string>();
  const depth = (j: GraphJob): number => {
    const known = level.get(j.id);
    if (known !== undefined) return known;
    // A cycle cannot be admitted (the parser rejects it); guard anyway so a bad row cannot hang the page.
    if (visiting.has(j.id)) return 0;
    visiting.add(j.id);
    let d = 0;
    for (const n of j.needs) {
      const dep = byName.get(n);
      if (dep) d = Math.max(d, depth(dep) + 1);
    }
    visiting.delete(j.id);
    level.set(j.id, d);
    return d;
  };
  const sorted = [...jobs].sort((a, b) => a.index - b.index);
  const columns: string[][] = [];
  const position = new Map<string, { column: number; row: number }>();
  for (const j of sorted) {
    const c = depth(j);
    while (columns.length <= c) columns.push([]);
    position.set(j.id, { column: c, row: columns[c]!.length });
    columns[c]!.push(j.id);
  }
  const edges: [string, string][] = [];
  for (const j of sorted)
    for (const n of j.needs) {
      const dep = byName.get(n);
      if (dep) edges.push([dep.id, j.id]);
    }
  return { columns, edges, position };
}
