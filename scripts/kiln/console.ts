// `repo list|remove` and `member list|role|remove` (issue 19): the admin console's use cases from
// the server's shell, audited under the shell's actor like every other change.
import { changeMemberRole, disconnectRepo, listMembers, listOrgRepos, removeMember } from "@kiln/engine";
import { arg, type CliCommand, opt, UsageError } from "./command.ts";

function orgAndName(full: string): { org: string; name: string } {
  const [org, ...rest] = full.split("/");
  if (!org || rest.length === 0) throw new UsageError("expected <org>/<name>");
  return { org, name: full };
}

export const consoleCommands: CliCommand[] = [
  {
    name: "repo list",
    usage: "repo list <org>                          (state, last webhook delivery, forge credential)",
    async run(ctx) {
      const repos = await listOrgRepos(ctx.db, { orgSlug: arg(ctx, 0, "org") });
      const lines = repos.map((r) =>
        [
          r.fullName,
          r.disconnectedAt ? `disconnected ${r.disconnectedAt}` : "connected",
          r.lastDelivery
            ? `last delivery ${r.lastDelivery.event} ${r.lastDelivery.outcome} ${r.lastDelivery.receivedAt}`
            : "no delivery yet",
          `forge credential ${r.forgeCredential.state}`,
          r.id,
        ].join("\t"),
      );
      ctx.out(lines.join("\n") || "(no repositories)", repos);
      return 0;
    },
  },
  {
    name: "repo remove",
    usage: "repo remove <org>/<name>                 (disconnect: no new runs; history kept; `repo add` reconnects)",
    async run(ctx) {
      const { org, name } = orgAndName(arg(ctx, 0, "org>/<name"));
      const r = await disconnectRepo(ctx.db, { orgSlug: org, repo: { fullName: name }, actor: ctx.actor });
      ctx.out(
        `${r.fullName} disconnected at ${r.disconnectedAt}${r.unfinishedRuns ? ` (${r.unfinishedRuns} unfinished run(s) will finish)` : ""}`,
        r,
      );
      return 0;
    },
  },
  {
    name: "member list",
    usage: "member list <org>",
    async run(ctx) {
      const members = await listMembers(ctx.db, { orgSlug: arg(ctx, 0, "org") });
      ctx.out(
        members.map((m) => `${m.login}\t${m.role}\tforge id ${m.forgeId ?? "-"}`).join("\n") || "(no members)",
        members,
      );
      return 0;
    },
  },
  {
    name: "member role",
    usage: "member role <org> <login> --role admin|member|auditor   (never the org's last admin)",
    options: { role: { type: "string" } },
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const login = arg(ctx, 1, "login");
      const role = opt(ctx.values, "role");
      if (!role) throw new UsageError("member role needs --role admin|member|auditor");
      const m = await changeMemberRole(ctx.db, { orgSlug: org, member: { login }, role, actor: ctx.actor });
      ctx.out(`${m.login} is now ${m.role} of ${org}`, m);
      return 0;
    },
  },
  {
    name: "member remove",
    usage: "member remove <org> <login>              (never the org's last admin)",
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const r = await removeMember(ctx.db, { orgSlug: org, member: { login: arg(ctx, 1, "login") }, actor: ctx.actor });
      ctx.out(`${r.login} is no longer a member of ${org}`, r);
      return 0;
    },
  },
];
