// What the soak runs: a mix of workflows, one org (tenant) per kind so webhooks can target each kind
// through the repo's configured workflow file, and the outcomes each kind may honestly end with.
import type { Outcome } from "@kiln/domain";
import type { Random } from "./random.ts";
import type { Stack } from "./stack.ts";

export type Kind = "ok" | "fail" | "cancel" | "biglog" | "artifact";

/** A big log: this exact line repeated, cut at BIGLOG_BYTES (deterministic, so sealed logs can be compared byte for byte). */
export const BIGLOG_LINE = "chaos: the quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ\n";
export const BIGLOG_BYTES = 3_000_000;

const WORKFLOWS: Record<Kind, string> = {
  ok: `version: 1
jobs:
  - name: build
    steps: ["echo building", "sleep 0.5"]
  - name: test
    steps: ["test -f README.md"]
`,
  fail: `version: 1
jobs:
  - name: build
    steps: ["echo about to fail >&2", "exit 3"]
`,
  cancel: `version: 1
jobs:
  - name: long
    steps: ["sleep 60"]
`,
  biglog: `version: 1
jobs:
  - name: chatty
    steps: ["yes '${BIGLOG_LINE.trimEnd()}' | head -c ${BIGLOG_BYTES}"]
`,
  artifact: `version: 1
jobs:
  - name: produce
    steps: ["head -c 1500000 /dev/urandom > blob.bin"]
    artifacts:
      publish:
        - {name: blob, path: blob.bin}
  - name: consume
    steps: ["test $(wc -c < in/blob.bin) -eq 1500000"]
    artifacts:
      restore:
        - {from_job: produce, name: blob, path: in/blob.bin}
`,
};

/**
 * The outcomes a run of each kind may end with. platform_failure is always honest (the retry budget
 * ran out under the faults); anything else outside the list means the platform lied, e.g. a run
 * whose step exits 3 reported success.
 */
export const HONEST: Record<Kind, readonly Outcome[]> = {
  ok: ["success", "platform_failure"],
  fail: ["user_failure", "platform_failure"],
  cancel: ["cancelled", "platform_failure"],
  biglog: ["success", "platform_failure"],
  artifact: ["success", "platform_failure"],
};

export interface KindTenant {
  kind: Kind;
  repoId: string;
  repoName: string;
  secret: string;
  token: string;
  agentToken: string;
  sha: string;
}

export async function seedKinds(stack: Stack, kinds: readonly Kind[]): Promise<Map<Kind, KindTenant>> {
  const out = new Map<Kind, KindTenant>();
  for (const kind of kinds) {
    const t = await stack.seedTenant(`chaos-${kind}`, {
      ".kiln/workflow.yaml": WORKFLOWS[kind],
      "README.md": `${kind}\n`,
    });
    out.set(kind, {
      kind,
      repoId: t.repoId,
      repoName: t.repoName,
      secret: t.secret,
      token: t.token,
      agentToken: t.agentToken,
      sha: t.git.headSha,
    });
  }
  return out;
}

export function pickKind(rng: Random, kinds: readonly Kind[]): Kind {
  const weights: Record<Kind, number> = { ok: 35, fail: 15, cancel: 15, biglog: 15, artifact: 20 };
  return rng.weighted(kinds.map((k) => [k, weights[k]] as const));
}
