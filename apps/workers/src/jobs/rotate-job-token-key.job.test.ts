import { platformKey } from "@kiln/engine";
import { useTestDb } from "@kiln/engine/testing";
import { describe, expect, it } from "vitest";
import { runKeyRotation } from "./rotate-job-token-key.job.ts";

// Run-it-twice (conventions rule 9): a due key is rotated once; the next pass finds nothing due.
const t = useTestDb();

describe("rotate-job-token-key job", () => {
  it("leaves a young key alone, rotates an old one once, and a second pass changes nothing", async () => {
    const first = await platformKey(t.db());
    expect(await runKeyRotation(t.db())).toMatchObject({ rotated: false, kid: first.kid });
    await t.db().$executeRaw`UPDATE job_token_key SET created_at = now() - interval '31 days' WHERE kid = ${first.kid}`;
    const r = await runKeyRotation(t.db());
    expect(r).toMatchObject({ rotated: true, retired: first.kid });
    const again = await runKeyRotation(t.db());
    expect(again).toMatchObject({ rotated: false, kid: r.kid });
    const keys = await t.db().$queryRaw<{ kid: string; retired: boolean; overlap_h: number }[]>`
      SELECT kid, retired_at IS NOT NULL AS retired,
             round(extract(epoch FROM verify_until - retired_at) / 3600)::int AS overlap_h
      FROM job_token_key ORDER BY created_at`;
    expect(keys).toEqual([
      { kid: first.kid, retired: true, overlap_h: 26 },
      { kid: r.kid, retired: false, overlap_h: null },
    ]);
  });
});
