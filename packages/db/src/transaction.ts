import type { Db, Tx } from "./client.ts";

export type Isolation = "ReadCommitted" | "RepeatableRead" | "Serializable";

// SQLSTATEs worth retrying: serialization failure and deadlock. Anything else is a real error.
const RETRYABLE = new Set(["40001", "40P01"]);

function sqlState(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let i = 0; i < 5 && cur && typeof cur === "object"; i++) {
    const o = cur as {
      code?: unknown;
      cause?: unknown;
      meta?: { code?: unknown; driverAdapterError?: { cause?: { originalCode?: unknown } } };
    };
    const original = o.meta?.driverAdapterError?.cause?.originalCode;
    if (typeof original === "string" && /^[0-9A-Z]{5}$/.test(original)) return original;
    if (typeof o.code === "string" && /^[0-9A-Z]{5}$/.test(o.code)) return o.code;
    if (typeof o.meta?.code === "string") return o.meta.code;
    cur = o.cause;
  }
  const msg = e instanceof Error ? e.message : "";
  if (/could not serialize access|40001/.test(msg)) return "40001";
  if (/deadlock detected|40P01/.test(msg)) return "40P01";
  return undefined;
}

/**
 * The one way to write: a named transaction with an explicit isolation level, retried on
 * serialization failures and deadlocks. Side effects never happen inside `fn`; they are outbox rows
 * committed with the state change (conventions rule 8).
 */
export async function withTx<T>(
  db: Db,
  name: string,
  fn: (tx: Tx) => Promise<T>,
  opts: { isolation?: Isolation; retries?: number; timeoutMs?: number } = {},
): Promise<T> {
  const retries = opts.retries ?? 5;
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.$transaction(fn, {
        isolationLevel: opts.isolation ?? "ReadCommitted",
        maxWait: 10_000,
        timeout: opts.timeoutMs ?? 15_000,
      });
    } catch (e) {
      const state = sqlState(e);
      if (state && RETRYABLE.has(state) && attempt < retries) {
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
        continue;
      }
      if (e instanceof Error && !("txName" in e)) Object.assign(e, { txName: name });
      throw e;
    }
  }
}
