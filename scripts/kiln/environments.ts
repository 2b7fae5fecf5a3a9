// `env`, `promote`, `promotion` and `rollback` commands (issue 18, docs/adr/0032). The operator's
// shell acts as an org admin for environment and policy changes; approvals and overrides are a
// member's, named with --as <login>. Every change is in the org's audit trail.
import { readFile } from "node:fs/promises";
import {
  builderPrefixFor,
  createEnvironment,
  findEnvironmentByName,
  getPolicyVersion,
  getPromotion,
  listEnvironments,
  listPromotableArtifacts,
  memberActor,
  orgIdBySlug,
  overridePromotion,
  PolicyCache,
  repoByFullName,
  requestPromotion,
  requestRollback,
  reviewPromotion,
  setEnvironmentPolicy,
  type EnvActor,
  type EnvDeps,
  type PromotionView,
} from "@kiln/engine";
import { arg, type CliCommand, type CliContext, opt, UsageError } from "./command.ts";

// The CLI decides with the same gates as the server; KILN_PUBLIC_URL names this Kiln's builder.
function deps(): EnvDeps {
  const url = process.env.KILN_PUBLIC_URL || "http://localhost:3000";
  return { builderPrefix: builderPrefixFor(url), gateTimeoutMs: 2_000, policies: new PolicyCache() };
}

async function actorFor(ctx: CliContext, orgId: string, required: boolean): Promise<EnvActor> {
  const as = opt(ctx.values, "as");
  if (as) return memberActor(ctx.db, { orgId, login: as, actor: ctx.actor });
  if (required) throw new UsageError("this needs --as <login>: approvals and overrides are a member's");
  return { orgId, role: "admin", userId: null, login: null, actor: ctx.actor };
}

async function envOf(ctx: CliContext) {
  const repo = await repoByFullName(ctx.db, arg(ctx, 0, "org/repo"));
  const env = await findEnvironmentByName(ctx.db, { orgId: repo.orgId, repoId: repo.id, name: arg(ctx, 1, "env") });
  return { repo, env };
}

function describe(p: PromotionView): string {
  const lines = [
    `promotion ${p.id} (${p.kind}) of ${p.artifact.name} sha256:${p.artifact.digest} to ${p.environment}: ${p.state}`,
    `verdict ${p.decision.verdict} (policy v${p.decision.policyVersion}, fails ${p.decision.failMode})`,
    ...p.decision.reasons.map((r) => `  ${r.gate}\t${r.status}\t${r.code}\t${r.message}`),
    ...p.approvals.map((a) => `  approval\t${a.login}\t${a.decision}\t${a.comment ?? ""}`),
    ...p.overrides.map(
      (o) => `  override\t${o.actorLogin ?? o.actor}\t${o.state}\texpires ${o.expiresAt}\t${o.gates.join(",")}`,
    ),
  ];
  return lines.join("\n");
}

const asOpt = { as: { type: "string" as const } };

export const environmentCommands: CliCommand[] = [
  {
    name: "env create",
    usage: "env create <org>/<repo> <env> [--after <env>] [--production]   (default gate policy; audited)",
    options: { after: { type: "string" }, production: { type: "boolean" } },
    async run(ctx) {
      const repo = await repoByFullName(ctx.db, arg(ctx, 0, "org/repo"));
      const after = opt(ctx.values, "after");
      const e = await createEnvironment(ctx.db, await actorFor(ctx, repo.orgId, false), {
        repoId: repo.id,
        name: arg(ctx, 1, "env"),
        after: after ?? null,
        production: ctx.values.production === true,
      });
      ctx.out(
        `environment ${e.id}: ${e.repo} ${e.name}${e.after ? ` after ${e.after}` : ""}${e.production ? " (production)" : ""}`,
        e,
      );
      return 0;
    },
  },
  {
    name: "env list",
    usage: "env list <org>/<repo>",
    async run(ctx) {
      const repo = await repoByFullName(ctx.db, arg(ctx, 0, "org/repo"));
      const rows = await listEnvironments(ctx.db, repo.orgId, repo.id);
      ctx.out(
        rows
          .map(
            (e) =>
              `${e.id}\t${e.name}\tafter=${e.after ?? "-"}\t${e.production ? "production" : "-"}\tpolicy v${e.policyVersion}\t${e.pointer ? `sha256:${e.pointer.digest} (${e.pointer.artifactId})` : "(nothing promoted)"}`,
          )
          .join("\n") || "(no environments)",
        rows,
      );
      return 0;
    },
  },
  {
    name: "env policy",
    usage:
      "env policy <org>/<repo> <env> [--file policy.json] [--comment <text>]   (without --file: shows the policy in force)",
    options: { file: { type: "string" }, comment: { type: "string" } },
    async run(ctx) {
      const { repo, env } = await envOf(ctx);
      const file = opt(ctx.values, "file");
      if (!file) {
        const v = await getPolicyVersion(ctx.db, repo.orgId, env.id);
        ctx.out(
          `policy v${v.version} of ${env.name} (by ${v.createdBy} at ${v.createdAt})\n${JSON.stringify(v.policy, null, 2)}`,
          v,
        );
        return 0;
      }
      let policy: unknown;
      try {
        policy = JSON.parse(await readFile(file, "utf8"));
      } catch (e) {
        throw new UsageError(`cannot read ${file} as JSON: ${e instanceof Error ? e.message : String(e)}`);
      }
      const v = await setEnvironmentPolicy(ctx.db, await actorFor(ctx, repo.orgId, false), {
        environmentId: env.id,
        policy,
        comment: opt(ctx.values, "comment") ?? null,
      });
      ctx.out(`policy v${v.version} of ${env.name} set`, v);
      return 0;
    },
  },
  {
    name: "env artifacts",
    usage:
      "env artifacts <org>/<repo> <env> [--limit <n>]   (the recent attested artifacts a promotion may name, newest first)",
    options: { limit: { type: "string" } },
    async run(ctx) {
      const { repo, env } = await envOf(ctx);
      const limit = Number(opt(ctx.values, "limit") ?? "20");
      if (!Number.isInteger(limit) || limit < 1) throw new UsageError("--limit takes a whole number from 1");
      const rows = await listPromotableArtifacts(ctx.db, repo.orgId, env.id, { limit });
      ctx.out(
        rows
          .map(
            (a) =>
              `${a.artifactId}\t${a.name}\t${a.job}\t${a.commitSha.slice(0, 7)}\tsha256:${a.digest.slice(0, 12)}\t${a.sealedAt}\t${a.attestation}`,
          )
          .join("\n") || "(no attested artifacts)",
        rows,
      );
      return 0;
    },
  },
  {
    name: "promote",
    usage:
      "promote <org>/<repo> <env> --artifact <artifact-id> --reason <text> [--as <login>]   (prints the decision; ids from env artifacts)",
    options: { artifact: { type: "string" }, reason: { type: "string" }, ...asOpt },
    async run(ctx) {
      const { repo, env } = await envOf(ctx);
      const artifactId = opt(ctx.values, "artifact");
      if (!artifactId) throw new UsageError("promote needs --artifact <artifact-id>");
      const p = await requestPromotion(ctx.db, deps(), await actorFor(ctx, repo.orgId, false), {
        environmentId: env.id,
        artifact: { artifactId },
        reason: opt(ctx.values, "reason") ?? "promoted from the CLI",
      });
      ctx.out(describe(p), p);
      return p.decision.verdict === "deny" ? 1 : 0;
    },
  },
  {
    name: "rollback",
    usage:
      "rollback <org>/<repo> <env> --to <artifact-id> --reason <text> [--as <login>]   (an artifact the environment ran before)",
    options: { to: { type: "string" }, reason: { type: "string" }, ...asOpt },
    async run(ctx) {
      const { repo, env } = await envOf(ctx);
      const to = opt(ctx.values, "to");
      if (!to) throw new UsageError("rollback needs --to <artifact-id>");
      const p = await requestRollback(ctx.db, deps(), await actorFor(ctx, repo.orgId, false), {
        environmentId: env.id,
        toArtifactId: to,
        reason: opt(ctx.values, "reason") ?? "rolled back from the CLI",
      });
      ctx.out(describe(p), p);
      return p.decision.verdict === "deny" ? 1 : 0;
    },
  },
  {
    name: "promotion show",
    usage: "promotion show <org> <promotion-id>",
    async run(ctx) {
      const orgId = await orgIdBySlug(ctx.db, arg(ctx, 0, "org"));
      const p = await getPromotion(ctx.db, orgId, arg(ctx, 1, "promotion-id"));
      ctx.out(describe(p), p);
      return 0;
    },
  },
  ...(["approve", "reject"] as const).map(
    (decision): CliCommand => ({
      name: `promotion ${decision}`,
      usage: `promotion ${decision} <org> <promotion-id> --as <login> [--comment <text>]`,
      options: { comment: { type: "string" }, ...asOpt },
      async run(ctx) {
        const orgId = await orgIdBySlug(ctx.db, arg(ctx, 0, "org"));
        const p = await reviewPromotion(ctx.db, deps(), await actorFor(ctx, orgId, true), {
          promotionId: arg(ctx, 1, "promotion-id"),
          decision,
          comment: opt(ctx.values, "comment") ?? null,
        });
        ctx.out(describe(p), p);
        return 0;
      },
    }),
  ),
  {
    name: "promotion override",
    usage:
      "promotion override <org> <promotion-id> --as <admin login> --reason <text> --expires <ISO time | 30m | 4h>   (break glass; audited)",
    options: { reason: { type: "string" }, expires: { type: "string" }, ...asOpt },
    async run(ctx) {
      const orgId = await orgIdBySlug(ctx.db, arg(ctx, 0, "org"));
      const reason = opt(ctx.values, "reason");
      const expires = opt(ctx.values, "expires");
      if (!reason || !expires) throw new UsageError("promotion override needs --reason and --expires");
      const p = await overridePromotion(ctx.db, deps(), await actorFor(ctx, orgId, true), {
        promotionId: arg(ctx, 1, "promotion-id"),
        reason,
        expiresAt: expiryOf(expires),
      });
      ctx.out(describe(p), p);
      return 0;
    },
  },
];

function expiryOf(v: string): Date {
  const rel = /^(\d+)([mhd])$/.exec(v);
  if (rel)
    return new Date(
      Date.now() + Number(rel[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[rel[2] as "m" | "h" | "d"],
    );
  const at = new Date(v);
  if (Number.isNaN(at.getTime())) throw new UsageError("--expires must be an ISO time or a duration like 30m, 4h, 1d");
  return at;
}
