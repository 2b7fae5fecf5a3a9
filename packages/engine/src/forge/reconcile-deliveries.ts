import type { Db } from "@kiln/db";
import { createAppJwt } from "./app-auth.ts";
import { credentialFor, type ForgeCredential, type RepoForgeRow } from "./credentials.ts";
import { type ForgeConfig, kilnWebhookUrl } from "./forge-config.ts";
import { ForgeApiError, forgeRequest } from "./github-api.ts";

// Missed deliveries (issue 19; seed 000 section 5): webhooks are the primary path, and this is the
// reconciliation that finds what they missed while Kiln was down or unreachable. For each hook it
// lists the forge's recent deliveries (newest first, cursor pagination) back to the durable cursor,
// and for every delivery GUID Kiln has no webhook_delivery row for, asks the forge to redeliver it.
// The redelivery arrives as a normal signed webhook and is admitted by the usual path, whose
// unique delivery id makes it exactly one run however often it is sent.

/** GitHub keeps a hook's deliveries for three days; older ones cannot be listed or redelivered. */
export const FORGE_DELIVERY_RETENTION_MS = 3 * 24 * 3600_000;
/** A GUID Kiln keeps refusing (e.g. a repo it does not know) is asked for at most this often. */
const MAX_REQUESTS_PER_GUID = 3;
/** A redelivery just asked for is given this long to arrive before it is asked for again. */
const REASK_AFTER_S = 60;
const MAX_PAGES = 30;
/** delivered_at has whole seconds and the forge's clock is not ours: a margin before "registered". */
const CLOCK_SLACK_MS = 5 * 60_000;

interface DeliveryItem {
  id: number;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  status_code: number;
  event: string;
}

export interface HookReport {
  hook: string;
  examined: number;
  redelivered: number;
  error: string | null;
}

interface Hook {
  key: string;
  /** Lists deliveries (absolute URL or path) and builds a delivery's redelivery path. */
  listPath: string;
  attemptsPath: (id: number) => string;
  auth: () => string;
  /** Deliveries older than this were made before Kiln knew the repo (or are past retention). */
  since: number;
}

export async function reconcileForgeDeliveries(
  db: Db,
  cfg: ForgeConfig,
  opts: { now?: number; pageSize?: number } = {},
): Promise<HookReport[]> {
  const now = opts.now ?? Date.now();
  const perPage = opts.pageSize ?? 100;
  const reports: HookReport[] = [];
  const repos = await db.$queryRaw<(RepoForgeRow & { full_name: string; created_at: Date })[]>`
    SELECT f.repo_id, f.token_enc, f.installation_id, f.hook_id, r.full_name, r.created_at
    FROM repo_forge f JOIN repo r ON r.id = f.repo_id
    WHERE f.token_enc IS NOT NULL OR f.hook_id IS NOT NULL ORDER BY r.full_name`;
  for (const repo of repos) {
    const key = `repo:${repo.repo_id}`;
    let credentialKey: string | null = null;
    try {
      const cred = await credentialFor(cfg, repo);
      if (cred.kind === "none") {
        reports.push(await recordPass(db, key, null, 0, 0, cred.reason));
        continue;
      }
      credentialKey = cred.key;
      // The credential's rate-limit pause (set by status deliveries too): one budget per token.
      if (await isPaused(db, cred.key)) {
        reports.push({ hook: key, examined: 0, redelivered: 0, error: "rate limited: waiting for the forge's reset" });
        continue;
      }
      const hookId = repo.hook_id
        ? Number(repo.hook_id)
        : await findHookId(db, cfg, cred, repo.repo_id, repo.full_name);
      if (!hookId) {
        reports.push(
          await recordPass(
            db,
            key,
            null,
            0,
            0,
            `no hook on ${repo.full_name} points at ${kilnWebhookUrl(cfg) ?? "(KILN_PUBLIC_URL unset)"}`,
          ),
        );
        continue;
      }
      const base = `/repos/${repo.full_name}/hooks/${hookId}/deliveries`;
      reports.push(
        await reconcileHook(
          db,
          cfg,
          {
            key,
            listPath: `${base}?per_page=${perPage}`,
            attemptsPath: (id) => `${base}/${id}/attempts`,
            auth: () => cred.auth,
            since: Math.max(repo.created_at.getTime() - CLOCK_SLACK_MS, now - FORGE_DELIVERY_RETENTION_MS),
          },
          hookId,
        ),
      );
    } catch (err) {
      if (err instanceof ForgeApiError && err.kind === "rate_limited")
        await pauseCredential(db, credentialKey ?? `repo:${repo.repo_id}`, err);
      reports.push(await recordPass(db, key, null, 0, 0, errorText(err)));
    }
  }
  const app = cfg.app;
  if (app) {
    const oldest = await db.$queryRaw<{ at: Date | null }[]>`SELECT min(created_at) AS at FROM repo`;
    try {
      reports.push(
        await reconcileHook(
          db,
          cfg,
          {
            key: "app",
            listPath: `/app/hook/deliveries?per_page=${perPage}`,
            attemptsPath: (id) => `/app/hook/deliveries/${id}/attempts`,
            // A fresh JWT per call: a long pass must not outlive its ten-minute token.
            auth: () => `Bearer ${createAppJwt(app, Date.now())}`,
            since: Math.max((oldest[0]?.at?.getTime() ?? now) - CLOCK_SLACK_MS, now - FORGE_DELIVERY_RETENTION_MS),
          },
          null,
        ),
      );
    } catch (err) {
      reports.push(await recordPass(db, "app", null, 0, 0, errorText(err)));
    }
  }
  return reports;
}

async function reconcileHook(db: Db, cfg: ForgeConfig, hook: Hook, hookId: number | null): Promise<HookReport> {
  const cursor = await db.$queryRaw<{ last_seen_delivery_id: bigint }[]>`
    SELECT last_seen_delivery_id FROM forge_hook_cursor WHERE hook_key = ${hook.key}`;
  const seen = Number(cursor[0]?.last_seen_delivery_id ?? 0n);
  const items: DeliveryItem[] = [];
  let next: string | null = hook.listPath;
  // Newest first: stop at the cursor (already examined) or at the retention/registration bound.
  pages: for (let page = 0; next && page < MAX_PAGES; page++) {
    const r: { body: DeliveryItem[]; next: string | null } = await forgeRequest<DeliveryItem[]>(cfg, {
      method: "GET",
      path: next,
      auth: hook.auth(),
    });
    for (const d of r.body) {
      if (d.id <= seen || Date.parse(d.delivered_at) < hook.since) break pages;
      items.push(d);
    }
    next = r.next;
  }
  const guids = [...new Set(items.map((d) => d.guid))];
  const known = await db.$queryRaw<{ delivery_id: string }[]>`
    SELECT delivery_id FROM webhook_delivery WHERE provider = 'github' AND delivery_id = ANY(${guids}::text[])`;
  const processed = new Set(known.map((k) => k.delivery_id));
  const unprocessed = guids.filter((g) => !processed.has(g));
  const asked = await db.$queryRaw<{ guid: string; exhausted: boolean; recent: boolean }[]>`
    SELECT guid, requests >= ${MAX_REQUESTS_PER_GUID} AS exhausted,
           last_requested_at > now() - make_interval(secs => ${REASK_AFTER_S}) AS recent
    FROM forge_redelivery WHERE guid = ANY(${unprocessed}::text[])`;
  const state = new Map(asked.map((a) => [a.guid, a]));
  let redelivered = 0;
  // Deliveries still owed a run hold the cursor below them, so the next pass looks at them again.
  const owed: number[] = [];
  for (const guid of unprocessed) {
    const prior = state.get(guid);
    if (prior?.exhausted) continue;
    const attempts = items.filter((x) => x.guid === guid);
    owed.push(...attempts.map((x) => x.id));
    if (prior?.recent) continue;
    // The newest attempt of this GUID is the one to redeliver.
    const d = attempts[0];
    if (!d) continue;
    await forgeRequest(cfg, { method: "POST", path: hook.attemptsPath(d.id), auth: hook.auth() });
    await db.$executeRaw`
      INSERT INTO forge_redelivery (guid, hook_key, forge_delivery_id) VALUES (${guid}, ${hook.key}, ${d.id})
      ON CONFLICT (guid) DO UPDATE SET requests = forge_redelivery.requests + 1, last_requested_at = now(),
        forge_delivery_id = EXCLUDED.forge_delivery_id`;
    redelivered++;
  }
  // The cursor moves only after a whole pass: a failure above leaves it, and the next pass
  // examines the same deliveries again (asking twice is harmless: admission dedupes by GUID).
  const newest = owed.length > 0 ? Math.min(...owed) - 1 : items.reduce((m, d) => Math.max(m, d.id), seen);
  return recordPass(db, hook.key, hookId, items.length, redelivered, null, newest);
}

async function findHookId(
  db: Db,
  cfg: ForgeConfig,
  cred: ForgeCredential,
  repoId: string,
  fullName: string,
): Promise<number | null> {
  const target = kilnWebhookUrl(cfg);
  if (!target || cred.kind === "none") return null;
  const r = await forgeRequest<{ id: number; config?: { url?: string } }[]>(cfg, {
    method: "GET",
    path: `/repos/${fullName}/hooks?per_page=100`,
    auth: cred.auth,
  });
  const hook = r.body.find((h) => h.config?.url === target);
  if (!hook) return null;
  // Remembered, so later passes skip the listing; `repo add --forge-hook-id` overrides it.
  await db.$executeRaw`UPDATE repo_forge SET hook_id = ${hook.id}, updated_at = now() WHERE repo_id = ${repoId}::uuid AND hook_id IS NULL`;
  return hook.id;
}

async function recordPass(
  db: Db,
  key: string,
  hookId: number | null,
  examined: number,
  redelivered: number,
  error: string | null,
  newest?: number,
): Promise<HookReport> {
  await db.$executeRaw`
    INSERT INTO forge_hook_cursor (hook_key, hook_id, last_seen_delivery_id, last_checked_at, last_error, redeliveries_requested)
    VALUES (${key}, ${hookId}, ${newest ?? 0}, now(), ${error}, ${redelivered})
    ON CONFLICT (hook_key) DO UPDATE SET hook_id = COALESCE(EXCLUDED.hook_id, forge_hook_cursor.hook_id),
      last_seen_delivery_id = CASE WHEN ${newest !== undefined} THEN EXCLUDED.last_seen_delivery_id ELSE forge_hook_cursor.last_seen_delivery_id END,
      last_checked_at = now(), last_error = EXCLUDED.last_error,
      redeliveries_requested = forge_hook_cursor.redeliveries_requested + EXCLUDED.redeliveries_requested`;
  return { hook: key, examined, redelivered, error };
}

function errorText(err: unknown): string {
  if (err instanceof ForgeApiError) return `${err.kind}: ${err.message}`.slice(0, 500);
  return (err instanceof Error ? err.message : String(err)).slice(0, 500);
}

async function isPaused(db: Db, credentialKey: string): Promise<boolean> {
  const rows = await db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM forge_rate_limit WHERE credential_key = ${credentialKey} AND until > now()`;
  return (rows[0]?.n ?? 0) > 0;
}

/** The same pause the status deliveries honour: one credential, one budget. */
async function pauseCredential(db: Db, credentialKey: string, err: ForgeApiError): Promise<void> {
  const ms = err.retryAfterMs ?? 60_000;
  await db.$executeRaw`
    INSERT INTO forge_rate_limit (credential_key, until, reason)
    VALUES (${credentialKey}, now() + make_interval(secs => ${ms / 1000}::float8), ${err.message.slice(0, 500)})
    ON CONFLICT (credential_key) DO UPDATE SET until = GREATEST(forge_rate_limit.until, EXCLUDED.until), reason = EXCLUDED.reason`;
}
