// `org`, `repo`, `member` and `platform-admin` commands.
import { addMember, addRepo, createOrg, listPlatformAdmins, setPlatformAdmin } from "@kiln/engine";
import { arg, type CliCommand, opt, UsageError } from "./command.ts";

export const tenantCommands: CliCommand[] = [
  {
    name: "org create",
    usage: "org create <slug>",
    async run(ctx) {
      const r = await createOrg(ctx.db, arg(ctx, 0, "slug"));
      ctx.out(`org ${r.slug} ${r.created ? "created" : "already exists"} (${r.id})`, r);
      return 0;
    },
  },
  {
    name: "repo add",
    usage:
      "repo add <org>/<name> --clone-url <url> --webhook-secret <secret> [--workflow-path .kiln/workflow.yaml] [--default-branch main]",
    options: {
      "clone-url": { type: "string" },
      "webhook-secret": { type: "string" },
      "workflow-path": { type: "string", default: ".kiln/workflow.yaml" },
      "default-branch": { type: "string" },
    },
    async run(ctx) {
      const name = arg(ctx, 0, "org>/<name");
      const [org, ...rest] = name.split("/");
      const cloneUrl = opt(ctx.values, "clone-url");
      const webhookSecret = opt(ctx.values, "webhook-secret");
      if (!org || rest.length === 0 || !cloneUrl || !webhookSecret)
        throw new UsageError("repo add needs <org>/<name>, --clone-url and --webhook-secret");
      const defaultBranch = opt(ctx.values, "default-branch");
      // docs/adr/0017: https:// clone URLs only, unless the operator enabled local repositories.
      const r = await addRepo(
        ctx.db,
        {
          orgSlug: org,
          name,
          cloneUrl,
          webhookSecret,
          workflowPath: opt(ctx.values, "workflow-path") ?? ".kiln/workflow.yaml",
          ...(defaultBranch ? { defaultBranch } : {}),
        },
        { localReposRoot: process.env.KILN_LOCAL_REPOS_ROOT || null },
      );
      ctx.out(`repo ${r.fullName} registered (id ${r.id})`, r);
      return 0;
    },
  },
  {
    name: "member add",
    usage: `member add <org> <login> --role admin|member|auditor --forge-id <n>
    (the forge's numeric user id, what webhook senders and sign-ins are matched by:
     curl -s https://api.github.com/users/<login> answers it as "id")`,
    options: { role: { type: "string" }, "forge-id": { type: "string" } },
    async run(ctx) {
      const org = arg(ctx, 0, "org");
      const login = arg(ctx, 1, "login");
      const role = opt(ctx.values, "role");
      if (!role) throw new UsageError("member add needs --role admin|member|auditor");
      const forgeId = opt(ctx.values, "forge-id");
      // Required: a member without the forge's id is never matched for trust (logins are re-registrable).
      if (!forgeId || !/^[1-9]\d{0,15}$/.test(forgeId))
        throw new UsageError(
          `member add needs --forge-id <n>: GitHub's numeric user id (curl -s https://api.github.com/users/${login} answers "id")`,
        );
      const r = await addMember(ctx.db, { orgSlug: org, login, role, forgeId: Number(forgeId) });
      ctx.out(`${login} (forge id ${forgeId}) is now ${role} of ${org}`, {
        ...r,
        org,
        login,
        role,
        forgeId: Number(forgeId),
      });
      return 0;
    },
  },
  ...(["add", "remove"] as const).map(
    (verb): CliCommand => ({
      name: `platform-admin ${verb}`,
      usage:
        verb === "add"
          ? "platform-admin add|remove <login>    (may set entitlements in shared pools from the dashboard)"
          : "",
      async run(ctx) {
        const r = await setPlatformAdmin(ctx.db, { login: arg(ctx, 0, "login"), admin: verb === "add" });
        ctx.out(`${r.login} is ${r.platformAdmin ? "now" : "no longer"} a platform admin`, r);
        return 0;
      },
    }),
  ),
  {
    name: "platform-admin list",
    usage: "platform-admin list",
    async run(ctx) {
      const rows = await listPlatformAdmins(ctx.db);
      ctx.out(rows.map((r) => `${r.login}\tforge id ${r.forgeId ?? "-"}`).join("\n") || "(no platform admins)", rows);
      return 0;
    },
  },
];
