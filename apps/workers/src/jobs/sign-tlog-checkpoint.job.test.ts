import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { withTx } from "@kiln/db";
import { appendTlogEntry, latestCheckpoint, logVerifierKey, openCheckpoint } from "@kiln/engine";
import { useTestDb } from "@kiln/engine/testing";
import { describe, expect, it } from "vitest";
import { runCheckpointSigning } from "./sign-tlog-checkpoint.job.ts";

// Run-it-twice (conventions rule 9): a pass signs the grown log once; the next finds nothing to do.
const t = useTestDb();
const settings = {
  origin: "workers.example/tlog",
  kek: new Uint8Array(randomBytes(32)),
  headFile: path.join(mkdtempSync(path.join(tmpdir(), "kiln-tlog-head-")), "keys/tlog-signed-head.json"),
};

describe("sign-tlog-checkpoint job", () => {
  it("signs the empty tree first, then each growth once; a second pass and racing passes sign nothing", async () => {
    expect(await runCheckpointSigning(t.db(), settings)).toEqual({ created: true, size: 0 });
    expect(await runCheckpointSigning(t.db(), settings)).toEqual({ created: false, size: 0 });
    await withTx(t.db(), "t", (tx) =>
      appendTlogEntry(tx, { kind: "test", bytes: new TextEncoder().encode("one"), dedupeKey: "one" }),
    );
    expect(await runCheckpointSigning(t.db(), settings)).toEqual({ created: true, size: 1 });
    const again = await Promise.all([1, 2, 3].map(() => runCheckpointSigning(t.db(), settings)));
    expect(again.map((r) => r.created)).toEqual([false, false, false]);
    const cp = await latestCheckpoint(t.db());
    expect(openCheckpoint(cp!.note, (await logVerifierKey(t.db()))!)).toMatchObject({
      ok: true,
      checkpoint: { origin: "workers.example/tlog", size: 1n },
    });
    const n = await t.db().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM tlog_checkpoint`;
    expect(n[0]!.n).toBe(2);
  });
});
