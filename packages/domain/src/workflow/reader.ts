import { isMap, isScalar, isSeq, type ParsedNode } from "yaml";
import { WorkflowInvalid, workflowError, type Position } from "./errors.ts";
import type { WorkflowErrorCode } from "./types.ts";

/**
 * A value together with where it came from, so any check on it can point the
 * user at the exact line and dotted path. `node` is null for a key with no value.
 */
export interface Located {
  node: ParsedNode | null;
  offset: number;
  path: string;
}

export function located(node: ParsedNode, path: string): Located {
  return { node, offset: node.range[0], path };
}

function childPath(parent: string, key: string | number): string {
  if (typeof key === "number") return `${parent}[${key}]`;
  const segment = /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key) ? key : JSON.stringify(key);
  if (parent === "") return segment;
  return segment.startsWith('"') ? `${parent}[${segment}]` : `${parent}.${segment}`;
}

function describe(node: ParsedNode | null): string {
  if (node === null) return "nothing";
  if (isMap(node)) return "a mapping";
  if (isSeq(node)) return "a list";
  if (isScalar(node)) {
    if (node.value === null) return "null";
    if (typeof node.value === "string") return "a string";
    if (typeof node.value === "number") return "a number";
    if (typeof node.value === "boolean") return "a boolean";
  }
  return "an unsupported value";
}

export class Reader {
  private readonly position: (offset: number) => Position;

  constructor(position: (offset: number) => Position) {
    this.position = position;
  }

  fail(at: Located, text: string, code?: WorkflowErrorCode): never {
    throw new WorkflowInvalid(workflowError(this.position(at.offset), at.path, text, code));
  }

  expected(at: Located, expected: string): never {
    return this.fail(at, `${label(at)} must be ${expected} (got ${describe(at.node)})`);
  }

  /** Rejects unknown keys so that a typo cannot silently disable a setting. */
  mapping(at: Located, allowed: readonly string[] | null, expected = "a mapping"): Map<string, Located> {
    const node = at.node;
    if (!isMap(node)) return this.expected(at, expected);
    const entries = new Map<string, Located>();
    for (const pair of node.items) {
      const key = pair.key as ParsedNode;
      const name = isScalar(key) && typeof key.value === "string" ? key.value : null;
      const keyAt: Located = { node: key, offset: key.range[0], path: at.path };
      if (name === null) return this.fail(keyAt, `${label(at)} keys must be strings`);
      keyAt.path = childPath(at.path, name);
      if (allowed && !allowed.includes(name)) {
        this.fail(keyAt, `unknown key ${JSON.stringify(name)} in ${label(at)}; expected one of: ${allowed.join(", ")}`);
      }
      const value = pair.value as ParsedNode | null;
      entries.set(name, value ? located(value, keyAt.path) : { ...keyAt, node: null });
    }
    return entries;
  }

  required(entries: Map<string, Located>, key: string, parent: Located): Located {
    const value = entries.get(key);
    if (!value) return this.fail(parent, `${label(parent)} is missing required key "${key}"`);
    return value;
  }

  list(at: Located, expected: string, limits: { min: number; max: number }): Located[] {
    const node = at.node;
    if (!isSeq(node)) return this.expected(at, expected);
    const items = node.items as ParsedNode[];
    if (items.length < limits.min) this.fail(at, `${label(at)} must be ${expected}`);
    if (items.length > limits.max) {
      this.fail(at, `${label(at)} has ${items.length} entries; at most ${limits.max} are allowed`);
    }
    return items.map((item, index) => located(item, childPath(at.path, index)));
  }

  /**
   * A scalar exactly as the user wrote it. Plain numbers and booleans keep their
   * source spelling, so `VERSION: 1.10` stays "1.10" and a `true` step stays the
   * shell builtin rather than becoming a boolean.
   */
  text(at: Located, expected = "a string"): string {
    const node = at.node;
    if (isScalar(node)) {
      if (typeof node.value === "string") return node.value;
      const literal = typeof node.value === "number" || typeof node.value === "boolean";
      if (literal && node.type === "PLAIN" && node.source) return node.source;
    }
    return this.expected(at, expected);
  }

  integer(at: Located, min: number, max: number, expected: string): number {
    const node = at.node;
    const value = isScalar(node) ? node.value : undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      return this.fail(at, `${label(at)} must be ${expected} (got ${shown(node)})`);
    }
    return value;
  }
}

export function label(at: Located): string {
  return at.path === "" ? "workflow" : at.path;
}

function shown(node: ParsedNode | null): string {
  if (isScalar(node) && typeof node.value === "number") return String(node.value);
  return describe(node);
}
