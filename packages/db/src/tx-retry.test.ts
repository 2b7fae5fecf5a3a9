import { describe, expect, it } from "vitest";
import { isRetryableTxError, sqlStateOf } from "./tx-retry.ts";

/** node-postgres' DatabaseError: an Error with the SQLSTATE in `code`. */
function pgError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code, severity: "ERROR" });
}

/** Prisma over @prisma/adapter-pg, a raw statement in an interactive transaction (seen in transaction.test.ts). */
function driverAdapterError(originalCode: string, kind: string): Error {
  return Object.assign(new Error(kind), {
    name: "DriverAdapterError",
    cause: { originalCode, originalMessage: "…", kind },
  });
}

/** Prisma's request error, with the driver's SQLSTATE in its meta. */
function prismaKnownError(code: string, originalCode?: string): Error {
  return Object.assign(new Error(`Prisma ${code}`), {
    code,
    meta: originalCode ? { driverAdapterError: { cause: { originalCode } } } : {},
  });
}

describe("isRetryableTxError", () => {
  it("retries serialization failures and deadlocks, in each driver's shape", () => {
    expect(isRetryableTxError(pgError("40001", "could not serialize access due to concurrent update"))).toBe(true);
    expect(isRetryableTxError(pgError("40P01", "deadlock detected"))).toBe(true);
    expect(isRetryableTxError(driverAdapterError("40001", "TransactionWriteConflict"))).toBe(true);
    expect(isRetryableTxError(driverAdapterError("40P01", "DeadlockDetected"))).toBe(true);
    expect(isRetryableTxError(prismaKnownError("P2010", "40001"))).toBe(true);
    expect(isRetryableTxError(prismaKnownError("P2034"))).toBe(true);
    expect(isRetryableTxError({ meta: { code: "40P01" } })).toBe(true);
    // Wrapped by our own code: the cause chain is followed.
    expect(isRetryableTxError(new Error("claim failed", { cause: pgError("40001", "x") }))).toBe(true);
  });

  it("recognises the server's wording when no code survived", () => {
    expect(isRetryableTxError(new Error("could not serialize access due to read/write dependencies"))).toBe(true);
    expect(isRetryableTxError(new Error("Transaction failed: deadlock detected"))).toBe(true);
  });

  it("never retries a constraint violation, whatever its message says", () => {
    for (const code of ["23505", "23503", "23514", "23502", "23P01"]) {
      expect(isRetryableTxError(pgError(code, "violates constraint"))).toBe(false);
      expect(isRetryableTxError(driverAdapterError(code, "UniqueConstraintViolation"))).toBe(false);
      expect(isRetryableTxError(prismaKnownError("P2002", code))).toBe(false);
    }
    // The code decides, not the text: a unique violation naming a "deadlock detected" value.
    expect(isRetryableTxError(pgError("23505", "Key (name)=(deadlock detected) already exists"))).toBe(false);
    expect(isRetryableTxError(prismaKnownError("P2002"))).toBe(false);
  });

  it("does not retry other failures", () => {
    expect(isRetryableTxError(pgError("57014", "canceling statement due to statement timeout"))).toBe(false);
    expect(isRetryableTxError(pgError("42P01", 'relation "x" does not exist'))).toBe(false);
    expect(isRetryableTxError(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }))).toBe(false);
    expect(isRetryableTxError(prismaKnownError("P2028"))).toBe(false);
    expect(isRetryableTxError(new Error("boom"))).toBe(false);
    expect(isRetryableTxError(undefined)).toBe(false);
    expect(isRetryableTxError("40001")).toBe(false);
  });
});

describe("sqlStateOf", () => {
  it("finds the SQLSTATE in each shape and skips Prisma's own codes", () => {
    expect(sqlStateOf(pgError("23505", "dup"))).toBe("23505");
    expect(sqlStateOf(driverAdapterError("40001", "TransactionWriteConflict"))).toBe("40001");
    expect(sqlStateOf(prismaKnownError("P2010", "40P01"))).toBe("40P01");
    expect(sqlStateOf(prismaKnownError("P2034"))).toBeUndefined();
    expect(sqlStateOf(new Error("no code"))).toBeUndefined();
  });
});
