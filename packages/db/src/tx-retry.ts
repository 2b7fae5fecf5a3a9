// Which failed transactions are worth running again. Pure: it looks only at the error value, so it
// is tested directly (tx-retry.test.ts) and shared by both drivers behind withTx.

/**
 * SQLSTATEs after which the same transaction, run again from the start, can succeed: PostgreSQL
 * rolled it back only because of concurrent transactions, and says so.
 * - 40001 serialization_failure: SERIALIZABLE/REPEATABLE READ conflicts, and a READ COMMITTED
 *   `FOR UPDATE` that lost a concurrent-update race under higher isolation.
 * - 40P01 deadlock_detected: the server chose this transaction as the victim; the other one went on.
 * Everything else is a real error: constraint violations (class 23) in particular are answers, not
 * accidents, and retrying them would repeat the same conflict (or hide an idempotency bug).
 */
const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set(["40001", "40P01"]);

/**
 * Prisma's own code for the same two failures ("Transaction failed due to a write conflict or a
 * deadlock. Please retry your transaction"), used when its error carries no SQLSTATE of the driver.
 */
const RETRYABLE_PRISMA_CODES: ReadonlySet<string> = new Set(["P2034"]);

const SQLSTATE = /^[0-9A-Z]{5}$/;
const PRISMA_CODE = /^P\d{4}$/;

interface ErrorShape {
  code?: unknown;
  originalCode?: unknown;
  cause?: unknown;
  meta?: { code?: unknown; driverAdapterError?: { cause?: { originalCode?: unknown; kind?: unknown } } };
}

/**
 * The PostgreSQL SQLSTATE behind an error from node-postgres (`code`) or from Prisma over the pg
 * driver adapter, following `cause` a few levels. Prisma has two shapes: a raw statement inside an
 * interactive transaction rejects with a DriverAdapterError whose `cause.originalCode` is the
 * SQLSTATE (a 40001 there went unrecognised, so unretried, before this function looked at it);
 * the client's request errors carry it as `meta.driverAdapterError.cause.originalCode` or
 * `meta.code`. Prisma's own P-codes are not SQLSTATEs and are skipped here.
 */
export function sqlStateOf(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let depth = 0; depth < 5 && cur && typeof cur === "object"; depth++) {
    const o = cur as ErrorShape;
    const original = o.originalCode ?? o.meta?.driverAdapterError?.cause?.originalCode;
    if (typeof original === "string" && SQLSTATE.test(original)) return original;
    if (typeof o.code === "string" && SQLSTATE.test(o.code) && !PRISMA_CODE.test(o.code)) return o.code;
    if (typeof o.meta?.code === "string" && SQLSTATE.test(o.meta.code)) return o.meta.code;
    cur = o.cause;
  }
  return undefined;
}

function prismaCodeOf(e: unknown): string | undefined {
  const code = e && typeof e === "object" ? (e as ErrorShape).code : undefined;
  return typeof code === "string" && PRISMA_CODE.test(code) ? code : undefined;
}

/**
 * Whether withTx runs the transaction again after `e`. A SQLSTATE, when there is one, decides alone.
 * Without one (Prisma reports some failures raised at COMMIT only in its message), the server's own
 * wording for the two retryable failures is recognised; a constraint violation has neither.
 */
export function isRetryableTxError(e: unknown): boolean {
  const state = sqlStateOf(e);
  if (state !== undefined) return RETRYABLE_SQLSTATES.has(state);
  const prisma = prismaCodeOf(e);
  if (prisma !== undefined && RETRYABLE_PRISMA_CODES.has(prisma)) return true;
  const message = e instanceof Error ? e.message : "";
  return /could not serialize access|deadlock detected|\b40001\b|\b40P01\b/.test(message);
}
