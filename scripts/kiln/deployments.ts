// Deploy configuration, variables, environment secrets and the deployment lock (issue 18,
// docs/adr/0033). The CLI is the operator's shell: it acts as an org admin of the named org, and
// the audit trail names the shell's actor. Secret values are read from stdin only.
import {
  clearDeployConfig,
  DEFAULT_ENGINE_CONFIG,
  deleteEnvironmentSecret,
  deleteEnvironmentVariable,
  getDeployConfig,
  listDeployments,
  listEnvironmentSecrets,
  releaseDeploymentLock,
  setDeployConfig,
  setEnvironmentSecret,
  setEnvironmentVariable,
  targetBySlug,
  type DeployCaller,
} from "@kiln/engine";
import { DomainError } from "@kiln/domain";
import { arg, type CliCommand, type CliContext, opt, UsageError } from "./command.ts";
import { cliKekSource, readStdin } from "./secrets.ts";

/** `<org>/<repo> <env>` -> the environment's id and an admin caller of its org. */
async function environment(ctx: CliContext): Promise<{ id: string; label: string; caller: DeployCaller }> {
  const target = await targetBySlug(ctx.db, arg(ctx, 0, "org/repo"));
  if (target.repoId === null) throw new UsageError("name the repository: <org>/<repo>");
  const name = arg(ctx, 1, "env");
  const rows = await ctx.db.$queryRaw<{ id: string }[]>`
    SELECT id FROM environment WHERE repo_id = ${target.repoId}::uuid AND org_id = ${target.orgId}::uuid AND name = ${name}`;
  if (!rows[0]) throw new DomainError("ENV.NOT_FOUND", `no environment ${name} in ${target.label}`);
  return {
    id: rows[0].id,
    label: `${target.label} ${name}`,
    caller: { orgId: target.orgId, role: "admin", actor: ctx.actor },
  };
}

export const deploymentCommands: CliCommand[] = [
  {
    name: "env deploy-config",
    usage:
      "env deploy-config <org>/<repo> <env> [--workflow <path> [--artifact-path <path>] | --clear]\n" +
      "    (the deploy workflow, read at the promoted artifact's commit; without options: show it)",
    options: { workflow: { type: "string" }, "artifact-path": { type: "string" }, clear: { type: "boolean" } },
    async run(ctx) {
      const env = await environment(ctx);
      const workflow = opt(ctx.values, "workflow");
      if (ctx.values.clear === true) {
        await clearDeployConfig(ctx.db, env.caller, env.id);
        ctx.out(`${env.label}: no deploy workflow`, { cleared: true });
        return 0;
      }
      const view = workflow
        ? await setDeployConfig(ctx.db, env.caller, env.id, {
            workflow_path: workflow,
            artifact_path: opt(ctx.values, "artifact-path") ?? null,
          })
        : await getDeployConfig(ctx.db, env.caller, env.id);
      const vars = view.variables.map((v) => `  ${v.name}=${v.value}`).join("\n");
      ctx.out(
        `${env.label}: workflow ${view.workflow_path ?? "(none)"}, artifact at ${view.artifact_path ?? "(default .kiln/promoted/<name>)"}${vars ? `\n${vars}` : ""}`,
        view,
      );
      return 0;
    },
  },
  {
    name: "env var-set",
    usage: "env var-set <org>/<repo> <env> <NAME> <value>   (a deploy-time variable; audited)",
    async run(ctx) {
      const env = await environment(ctx);
      const r = await setEnvironmentVariable(ctx.db, env.caller, env.id, {
        name: arg(ctx, 2, "NAME"),
        value: ctx.args[3] ?? "",
      });
      ctx.out(`${env.label} ${r.name}=${r.value}`, r);
      return 0;
    },
  },
  {
    name: "env var-delete",
    usage: "env var-delete <org>/<repo> <env> <NAME>   (audited)",
    async run(ctx) {
      const env = await environment(ctx);
      const name = arg(ctx, 2, "NAME");
      await deleteEnvironmentVariable(ctx.db, env.caller, env.id, name);
      ctx.out(`${env.label} ${name}: deleted`, { deleted: name });
      return 0;
    },
  },
  {
    name: "env secret-set",
    usage: "env secret-set <org>/<repo> <env> <NAME>   (value from stdin; only this environment's deploy runs get it)",
    async run(ctx) {
      const env = await environment(ctx);
      const name = arg(ctx, 2, "NAME");
      const r = await setEnvironmentSecret(ctx.db, cliKekSource(), env.caller, env.id, {
        name,
        value: await readStdin(),
      });
      ctx.out(`${env.label} ${r.name}: version ${r.version}`, r);
      return 0;
    },
  },
  {
    name: "env secret-delete",
    usage: "env secret-delete <org>/<repo> <env> <NAME>   (audited)",
    async run(ctx) {
      const env = await environment(ctx);
      const r = await deleteEnvironmentSecret(ctx.db, env.caller, env.id, arg(ctx, 2, "NAME"));
      ctx.out(`${env.label} ${r.name}: deleted (was version ${r.version})`, r);
      return 0;
    },
  },
  {
    name: "env secrets",
    usage: "env secrets <org>/<repo> <env>   (names and versions, never values)",
    async run(ctx) {
      const env = await environment(ctx);
      const rows = await listEnvironmentSecrets(ctx.db, env.caller, env.id);
      ctx.out(
        rows.map((r) => `${r.name}\tv${r.version}\t${r.updated_by}\t${r.updated_at}`).join("\n") ||
          `(${env.label} has no secrets)`,
        rows,
      );
      return 0;
    },
  },
  {
    name: "env deployments",
    usage: "env deployments <org>/<repo> <env>   (the deployment lock's holder and why, then the deploy history)",
    async run(ctx) {
      const env = await environment(ctx);
      const v = await listDeployments(ctx.db, env.caller, env.id);
      const lock = v.lock ? `lock: held by run ${v.lock.run_id} (${v.lock.why})` : "lock: free";
      const rows = v.deployments.map(
        (d) => `${d.pointer_seq}\t${d.kind}\t${d.state}\tsha256:${d.digest.slice(0, 12)}\t${d.run_id ?? "-"}`,
      );
      ctx.out([`${env.label}`, lock, ...rows].join("\n"), v);
      return 0;
    },
  },
  {
    name: "env unlock",
    usage:
      "env unlock <org>/<repo> <env> --reason <text>\n" +
      "    (releases a lock held by a silent attempt on a host Kiln does not control; audited)",
    options: { reason: { type: "string" } },
    async run(ctx) {
      const env = await environment(ctx);
      const reason = opt(ctx.values, "reason");
      if (!reason) throw new UsageError("--reason is required");
      const r = await releaseDeploymentLock(ctx.db, DEFAULT_ENGINE_CONFIG, env.caller, env.id, reason);
      ctx.out(`${env.label}: lock ${r.lock_id} released`, r);
      return 0;
    },
  },
];
