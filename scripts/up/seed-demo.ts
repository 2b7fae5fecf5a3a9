// `npm run up`'s demo tenant: the org "demo" with an admin, a local git repository with a workflow,
// an API token, a host credential for the default pool, and a webhook secret kept across restarts.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Db } from "@kiln/db";
import { addMember, addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import { createDemoRepo } from "./demo-repo.ts";

/** demo-dev's forge user id (GitHub's numeric user id); a webhook sender must carry it to be trusted. */
const DEMO_FORGE_ID = 100_000_001;

export interface Demo {
  forgeId: number;
  repoId: string;
  cloneUrl: string;
  commitSha: string;
  apiToken: string;
  agentToken: string;
  webhookSecret: string;
}

export async function seedDemo(db: Db, dataDir: string): Promise<Demo> {
  await createOrg(db, "demo");
  // A made-up forge id: webhook senders and GitHub sign-ins are matched by it, never by login.
  await addMember(db, { orgSlug: "demo", login: "demo-dev", role: "admin", forgeId: DEMO_FORGE_ID });
  const { cloneUrl, commitSha } = await createDemoRepo(path.join(dataDir, "demo-repo"));
  // The secret survives restarts so a forge configured once keeps working.
  const secretFile = path.join(dataDir, "webhook-secret");
  if (!existsSync(secretFile)) await writeFile(secretFile, randomBytes(16).toString("hex"), { mode: 0o600 });
  const webhookSecret = (await readFile(secretFile, "utf8")).trim();
  const repo = await addRepo(
    db,
    {
      orgSlug: "demo",
      name: "demo/app",
      cloneUrl,
      webhookSecret,
      workflowPath: ".kiln/workflow.yaml",
    },
    { localReposRoot: path.resolve(dataDir) },
  );
  const api = await createApiToken(db, { orgSlug: "demo", role: "admin", name: "up" });
  const agent = await createAgentToken(db, { pool: "default" });
  return {
    forgeId: DEMO_FORGE_ID,
    repoId: repo.id,
    cloneUrl,
    commitSha,
    apiToken: api.token,
    agentToken: agent.token,
    webhookSecret,
  };
}
