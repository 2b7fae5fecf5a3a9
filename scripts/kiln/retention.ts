// `retention plan|hold|window|release-patterns` (issue 21, docs/adr/0036). The operator acts for the
// platform: holds by artifact id in any org (named `cli:<user>` in the org's audit trail), windows
// as an admin of the named org, so the same never-lengthen rule applies as for the API.
import {
  addRetentionHold,
  engineEnvSchema,
  getOrgRetention,
  listRetentionHolds,
  orgIdOf,
  planRetentionPass,
  removeRetentionHold,
  repoByFullName,
  setOrgRetentionWindow,
  setReleasePatterns,
} from "@kiln/engine";
import { RETENTION_CLASSES, RETENTION_KINDS, type RetentionPlanEntry } from "@kiln/domain";
import { arg, opt, type CliCommand, type CliContext, UsageError } from "./command.ts";

/** The platform windows, parsed exactly as the web and workers parse KILN_RETENTION_WINDOWS. */
function platformWindows() {
  return engineEnvSchema.shape.KILN_RETENTION_WINDOWS.parse(process.env.KILN_RETENTION_WINDOWS);
}

const operator = (ctx: CliContext, orgId: string | null) => ({ orgId, role: "admin" as const, actor: ctx.actor });
const line = (e: RetentionPlanEntry) => `${e.kind}\t${e.id}\t${e.class}\t${e.expires_at}\t${e.reason}`;

export const retentionCommands: CliCommand[] = [
  {
    name: "retention plan",
    usage: `retention plan --at <ISO date> [--org <org>] [--json]
    (what the retention worker would evict then, and what it keeps and why; changes nothing)`,
    options: { at: { type: "string" }, org: { type: "string" } },
    async run(ctx) {
      const atText = opt(ctx.values, "at");
      const at = atText ? new Date(atText) : new Date();
      if (Number.isNaN(at.getTime())) throw new UsageError("--at must be an ISO date or time");
      const org = opt(ctx.values, "org");
      const plan = await planRetentionPass(ctx.db, {
        at,
        windows: platformWindows(),
        orgId: org ? await orgIdOf(ctx.db, org) : null,
      });
      ctx.out(
        [
          `at ${plan.at}: ${plan.evict.length} to evict, ${plan.kept.length} expired but kept`,
          ...plan.evict.map((e) => `evict\t${line(e)}`),
          ...plan.kept.map((e) => `keep\t${line(e)}`),
        ].join("\n"),
        plan,
      );
      return 0;
    },
  },
  {
    // Commands are "noun verb": add | remove | list is the first argument here.
    name: "retention hold",
    usage: `retention hold add <artifact_id> --reason <text>   (kept past its expiry until removed; audited)
  retention hold remove <artifact_id>
  retention hold list [--org <org>] [--all]   (--all: lifted holds too)`,
    options: { reason: { type: "string" }, org: { type: "string" }, all: { type: "boolean" } },
    async run(ctx) {
      const verb = arg(ctx, 0, "add|remove|list");
      if (verb === "add") {
        const reason = opt(ctx.values, "reason");
        if (!reason) throw new UsageError("--reason is required");
        const h = await addRetentionHold(ctx.db, operator(ctx, null), {
          artifactId: arg(ctx, 1, "artifact_id"),
          reason,
        });
        ctx.out(`hold ${h.id} on artifact ${h.artifact_id}: ${h.reason}`, h);
      } else if (verb === "remove") {
        const h = await removeRetentionHold(ctx.db, operator(ctx, null), { artifactId: arg(ctx, 1, "artifact_id") });
        ctx.out(`hold ${h.id} on artifact ${h.artifact_id} removed`, h);
      } else if (verb === "list") {
        const org = opt(ctx.values, "org");
        const holds = await listRetentionHolds(ctx.db, operator(ctx, org ? await orgIdOf(ctx.db, org) : null), {
          includeRemoved: ctx.values.all === true,
        });
        ctx.out(
          holds
            .map(
              (h) =>
                `${h.artifact_id}\t${h.created_at}\t${h.created_by}\t${h.removed_at ? "removed" : "active"}\t${h.reason}`,
            )
            .join("\n") || "(no holds)",
          holds,
        );
      } else throw new UsageError("retention hold add|remove|list");
      return 0;
    },
  },
  {
    name: "retention window",
    usage: `retention window show <org>
  retention window set <org> <kind> <class> <days|clear>
    (kind: ${RETENTION_KINDS.join("|")}; class: ${RETENTION_CLASSES.join("|")}; never longer than the platform's)`,
    async run(ctx) {
      const verb = arg(ctx, 0, "show|set");
      const org = operator(ctx, await orgIdOf(ctx.db, arg(ctx, 1, "org")));
      if (verb === "show") {
        const v = await getOrgRetention(ctx.db, org, platformWindows());
        ctx.out(
          RETENTION_KINDS.map(
            (k) => `${k}\t${RETENTION_CLASSES.map((c) => `${c}=${v.effective[k][c]}d`).join("\t")}`,
          ).join("\n"),
          v,
        );
        return 0;
      }
      if (verb !== "set") throw new UsageError("retention window show|set");
      const kind = RETENTION_KINDS.find((k) => k === arg(ctx, 2, "kind"));
      const cls = RETENTION_CLASSES.find((c) => c === arg(ctx, 3, "class"));
      if (!kind || !cls) throw new UsageError("unknown kind or class");
      const daysText = arg(ctx, 4, "days");
      if (daysText !== "clear" && !/^\d+$/.test(daysText)) throw new UsageError("<days> is a whole number or clear");
      const v = await setOrgRetentionWindow(ctx.db, org, platformWindows(), {
        kind,
        cls,
        days: daysText === "clear" ? null : Number(daysText),
      });
      ctx.out(`${kind}/${cls}: ${v.effective[kind][cls]} days`, v);
      return 0;
    },
  },
  {
    name: "retention release-patterns",
    usage: "retention release-patterns <org>/<repo> [<pattern> ...]   (globs; none clears; tags are always releases)",
    async run(ctx) {
      const repo = await repoByFullName(ctx.db, arg(ctx, 0, "org/repo"));
      const r = await setReleasePatterns(ctx.db, operator(ctx, repo.orgId), {
        repoId: repo.id,
        patterns: ctx.args.slice(1),
      });
      ctx.out(`release patterns: ${r.release_patterns.join(" ") || "(none: tags only)"}`, r);
      return 0;
    },
  },
];
