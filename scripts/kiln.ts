// The `kiln` admin CLI: `npm run kiln -- <command>` against the running instance's database
// (DATABASE_URL, or the URL `npm run up` recorded in $KILN_DATA_DIR/instance.json).
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { createDb } from "@kiln/db";
import { isDomainError } from "@kiln/domain";
import {
  addMember,
  addRepo,
  createAgentToken,
  createApiToken,
  createOrg,
  listPlatformAdmins,
  setPlatformAdmin,
  listAgentTokens,
  listApiTokens,
  listEntitlements,
  revokeAgentToken,
  revokeApiToken,
  rotateJobTokenKey,
  setEntitlement,
} from "@kiln/engine";
import {
  allowEgressHost,
  listEgressRules,
  listPools,
  removeEgressHost,
  setPoolPolicy,
  type PoolView,
} from "@kiln/engine";

const USAGE = `usage: npm run kiln -- <command> [--json]
  org create <slug>
  repo add <org>/<name> --clone-url <url> --webhook-secret <secret> [--workflow-path .kiln/workflow.yaml] [--default-branch main]
  member add <org> <login> --role admin|member|auditor --forge-id <n>
      (the forge's numeric user id, what webhook senders and sign-ins are matched by:
       curl -s https://api.github.com/users/<login> answers it as "id")
  platform-admin add|remove <login>    (may set entitlements in shared pools from the dashboard)
  platform-admin list
  token create <org> --role admin|member|auditor [--name <name>] [--expires-days 90]   (prints the token once)
  token list <org>
  token revoke <org> <token-id>
  agent-token create [--pool <name>] [--org <org>] [--name <name>]   (a host credential; --org: the org owns the pool)
  agent-token list
  agent-token revoke <id>     (its next claim and heartbeats are refused; its attempts fence within one lease)
  job-key rotate              (a new job-token signing key; the previous one verifies until its tokens expire)
  entitlement set <org> --pool <pool> --slots <n> --weight <w> [--cap <n>]   (platform operators; audited)
  entitlement list [<org>]
  egress allow <org> <host-pattern>   (host, *.suffix, optional :port; audited)
  egress deny <org> <host-pattern>    (removes the entry: anything not listed is denied; audited)
  egress list <org>
  pool set <name> --isolation microvm|process [--org <org>] [--development] [--no-untrusted] [--untrusted-on-process]
      (the minimum isolation class of its hosts; --org: one org owns it; --development: one operator's own pool,
       whose process hosts may serve several orgs; untrusted runs need microVMs unless an owned pool says otherwise)
  pool list`;

function databaseUrl(): string {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const dataDir = path.resolve(process.env.KILN_DATA_DIR ?? ".kiln-data");
  try {
    const info = JSON.parse(readFileSync(path.join(dataDir, "instance.json"), "utf8")) as { databaseUrl?: string };
    if (info.databaseUrl) return info.databaseUrl;
  } catch {
    // fall through to the error below
  }
  throw new Error(`no DATABASE_URL and no running instance found in ${dataDir} (start one with npm run up)`);
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      json: { type: "boolean", default: false },
      role: { type: "string" },
      name: { type: "string" },
      org: { type: "string" },
      "expires-days": { type: "string" },
      pool: { type: "string", default: "default" },
      "clone-url": { type: "string" },
      "webhook-secret": { type: "string" },
      "workflow-path": { type: "string", default: ".kiln/workflow.yaml" },
      "default-branch": { type: "string" },
      "forge-id": { type: "string" },
      help: { type: "boolean", default: false },
      slots: { type: "string" },
      weight: { type: "string" },
      cap: { type: "string" },
      isolation: { type: "string" },
      development: { type: "boolean", default: false },
      "no-untrusted": { type: "boolean", default: false },
      "untrusted-on-process": { type: "boolean", default: false },
    },
  });
  const [noun, verb, a, b] = positionals;
  if (values.help || !noun) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const db = createDb({ url: databaseUrl(), max: 2 });
  const out = (human: string, data: unknown) => console.log(values.json ? JSON.stringify(data) : human);
  try {
    const cmd = `${noun} ${verb ?? ""}`;
    if (cmd === "org create" && a) {
      const r = await createOrg(db, a);
      out(`org ${r.slug} ${r.created ? "created" : "already exists"} (${r.id})`, r);
    } else if (cmd === "repo add" && a) {
      const [org, ...rest] = a.split("/");
      if (!org || rest.length === 0 || !values["clone-url"] || !values["webhook-secret"])
        throw new Error("repo add needs <org>/<name>, --clone-url and --webhook-secret");
      // docs/adr/0017: https:// clone URLs only, unless the operator enabled local repositories.
      const r = await addRepo(
        db,
        {
          orgSlug: org,
          name: a,
          cloneUrl: values["clone-url"],
          webhookSecret: values["webhook-secret"],
          workflowPath: values["workflow-path"] ?? ".kiln/workflow.yaml",
          ...(values["default-branch"] ? { defaultBranch: values["default-branch"] } : {}),
        },
        { localReposRoot: process.env.KILN_LOCAL_REPOS_ROOT || null },
      );
      out(`repo ${r.fullName} registered (id ${r.id})`, r);
    } else if (cmd === "member add" && a && b && values.role) {
      const forgeId = values["forge-id"];
      // Required: a member without the forge's id is never matched for trust (logins are re-registrable).
      if (!forgeId || !/^[1-9]\d{0,15}$/.test(forgeId))
        throw new Error(
          `member add needs --forge-id <n>: GitHub's numeric user id (curl -s https://api.github.com/users/${b} answers "id")`,
        );
      const r = await addMember(db, { orgSlug: a, login: b, role: values.role, forgeId: Number(forgeId) });
      out(`${b} (forge id ${forgeId}) is now ${values.role} of ${a}`, {
        ...r,
        org: a,
        login: b,
        role: values.role,
        forgeId: Number(forgeId),
      });
    } else if ((cmd === "platform-admin add" || cmd === "platform-admin remove") && a) {
      const r = await setPlatformAdmin(db, { login: a, admin: verb === "add" });
      out(`${r.login} is ${r.platformAdmin ? "now" : "no longer"} a platform admin`, r);
    } else if (cmd === "platform-admin list") {
      const rows = await listPlatformAdmins(db);
      out(rows.map((r) => `${r.login}\tforge id ${r.forgeId ?? "-"}`).join("\n") || "(no platform admins)", rows);
    } else if (cmd === "token create" && a && values.role) {
      const days = values["expires-days"];
      if (days !== undefined && !/^\d+$/.test(days)) throw new Error("--expires-days must be a whole number");
      const r = await createApiToken(db, {
        orgSlug: a,
        role: values.role,
        ...(values.name ? { name: values.name } : {}),
        ...(days !== undefined ? { expiresInDays: Number(days) } : {}),
      });
      out(`${r.token}\n(shown once; only its hash is stored; expires ${r.expiresAt})`, {
        id: r.id,
        token: r.token,
        org: a,
        role: values.role,
        expiresAt: r.expiresAt,
      });
    } else if (cmd === "agent-token create") {
      const r = await createAgentToken(db, {
        pool: values.pool ?? "default",
        ...(values.org ? { orgSlug: values.org } : {}),
        ...(values.name ? { name: values.name } : {}),
      });
      out(`${r.token}\n(host credential for pool ${r.pool}${values.org ? `, org ${values.org}` : ""}; shown once)`, r);
    } else if (noun === "token" || noun === "agent-token" || noun === "job-key") {
      if (!(await credentialCommand(db, cmd, a, b, out))) {
        console.error(USAGE);
        return 2;
      }
    } else if (cmd === "entitlement set" && a && values.slots && values.weight) {
      const int = (v: string, what: string) => {
        if (!/^\d+$/.test(v)) throw new Error(`--${what} must be a non-negative integer`);
        return Number(v);
      };
      const r = await setEntitlement(db, {
        orgSlug: a,
        pool: values.pool ?? "default",
        slots: int(values.slots, "slots"),
        weight: int(values.weight, "weight"),
        hardCap: values.cap === undefined ? null : int(values.cap, "cap"),
        actor: `cli:${process.env.USER ?? "unknown"}`,
      });
      out(
        `${r.org} in pool ${r.pool}: ${r.slots} slots, weight ${r.weight}, cap ${r.hard_cap ?? "none"} (running ${r.running})`,
        r,
      );
    } else if (cmd === "entitlement list") {
      const rows = await listEntitlements(db, a);
      out(
        rows
          .map(
            (r) =>
              `${r.org}\t${r.pool}\tslots=${r.slots}\tweight=${r.weight}\tcap=${r.hard_cap ?? "-"}\trunning=${r.running}`,
          )
          .join("\n") || "(no entitlements)",
        rows,
      );
    } else if (noun === "egress" && verb && a) {
      await egressCommand(db, verb, a, b, out);
    } else if (cmd === "pool set" && a && values.isolation) {
      if (values.isolation !== "microvm" && values.isolation !== "process")
        throw new Error("--isolation must be microvm or process");
      const r = await setPoolPolicy(db, {
        name: a,
        minIsolation: values.isolation,
        admitsUntrusted: !values["no-untrusted"],
        untrustedOnProcess: values["untrusted-on-process"] ?? false,
        ownerOrg: values.org ?? null,
        development: values.development ?? false,
        actor: `cli:${process.env.USER ?? "unknown"}`,
      });
      out(describePool(r), r);
    } else if (cmd === "pool list") {
      const rows = await listPools(db, null);
      out(
        rows.map(describePool).join("\n") || "(no pools configured: every pool is shared and needs microVM hosts)",
        rows,
      );
    } else {
      console.error(USAGE);
      return 2;
    }
    return 0;
  } catch (e) {
    // A refused clone URL names its rule too (details.reason, e.g. SOURCE.SCHEME_NOT_ALLOWED).
    const reason = isDomainError(e) && typeof e.details?.reason === "string" ? ` (${e.details.reason})` : "";
    const msg = isDomainError(e) ? `${e.code}${reason}: ${e.message}` : e instanceof Error ? e.message : String(e);
    if (values.json)
      console.log(JSON.stringify({ error: { code: isDomainError(e) ? e.code : "CLI.ERROR", message: msg } }));
    else console.error(`kiln: ${msg}`);
    return 1;
  } finally {
    await db.$disconnect();
  }
}

/** `token list|revoke`, `agent-token list|revoke`, `job-key rotate` (issue 15); false: not one of them. */
async function credentialCommand(
  db: ReturnType<typeof createDb>,
  cmd: string,
  a: string | undefined,
  b: string | undefined,
  out: (human: string, data: unknown) => void,
): Promise<boolean> {
  if (cmd === "token list" && a) {
    const rows = await listApiTokens(db, { orgSlug: a });
    out(
      rows
        .map(
          (t) =>
            `${t.id}\t${t.name}\t${t.role}\t${t.state}\texpires ${t.expiresAt}\tlast used ${t.lastUsedAt ?? "never"}`,
        )
        .join("\n") || `(${a} has no API tokens)`,
      rows,
    );
  } else if (cmd === "token revoke" && a && b) {
    const t = await revokeApiToken(db, { orgSlug: a, tokenId: b });
    out(`token ${t.id} (${t.name}) of ${a} revoked at ${t.revokedAt ?? ""}`, t);
  } else if (cmd === "agent-token list") {
    const rows = await listAgentTokens(db);
    out(
      rows
        .map(
          (t) =>
            `${t.id}\t${t.name}\tpool=${t.pool}\torg=${t.org ?? "-"}\t${t.revokedAt ? `revoked ${t.revokedAt}` : "active"}\tlast seen ${t.lastSeenAt ?? "never"}`,
        )
        .join("\n") || "(no host credentials)",
      rows,
    );
  } else if (cmd === "agent-token revoke" && a) {
    const t = await revokeAgentToken(db, { id: a });
    out(`host credential ${t.id} (pool ${t.pool}) revoked at ${t.revokedAt ?? ""}`, t);
  } else if (cmd === "job-key rotate") {
    const r = await rotateJobTokenKey(db);
    out(
      `job tokens are now signed with key ${r.kid}${r.retired ? `; ${r.retired} verifies until its tokens expire` : ""}`,
      r,
    );
  } else {
    return false;
  }
  return true;
}

/** `egress allow|deny|list`: the org's mediated-egress allow-list (docs/adr/0013-mediated-egress.md). */
async function egressCommand(
  db: ReturnType<typeof createDb>,
  verb: string,
  org: string,
  pattern: string | undefined,
  out: (human: string, data: unknown) => void,
): Promise<void> {
  const actor = `cli:${process.env.USER ?? "unknown"}`;
  if (verb === "list") {
    const rows = await listEgressRules(db, org);
    return out(
      rows.map((r) => `${r.org}\t${r.pattern}\tby ${r.created_by}\t${r.created_at}`).join("\n") ||
        `(${org} has no egress allow-list entries)`,
      rows,
    );
  }
  if (!pattern || (verb !== "allow" && verb !== "deny"))
    throw new Error("egress needs allow|deny <org> <host-pattern> or list <org>");
  if (verb === "allow") {
    const r = await allowEgressHost(db, { orgSlug: org, pattern, actor });
    return out(`${org} may reach ${r.rule.pattern} from trusted runs${r.created ? "" : " (already allowed)"}`, r);
  }
  await removeEgressHost(db, { orgSlug: org, pattern, actor });
  out(`${pattern} removed from ${org}'s egress allow-list`, { org, pattern, removed: true });
}

process.exit(await main());

function describePool(p: PoolView): string {
  const x = p.policy;
  const tenancy = p.ownerOrg ? `owned by ${p.ownerOrg}` : x.development ? "development (one operator)" : "shared";
  const untrusted = !x.admitsUntrusted
    ? "no untrusted runs"
    : x.untrustedOnProcess
      ? "untrusted also on process hosts"
      : "untrusted on microVMs only";
  return `${p.name}\tmin isolation ${x.minIsolation}\t${tenancy}\t${untrusted}`;
}
