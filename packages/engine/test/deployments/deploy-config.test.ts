// Deploy configuration from the hostile side (issue 18): another org's admin, a member, bad names
// and paths. Every refusal is a namespaced code and writes nothing; every change is audited.
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  deployConfigBody,
  getDeployConfig,
  listDeployments,
  listEnvironmentSecrets,
  setDeployConfig,
  setEnvironmentSecret,
  setEnvironmentVariable,
} from "../../src/deployments/index.ts";
import { generateKekText, KekSource } from "../../src/secrets/index.ts";
import { seedTenant, useTestDb, type Tenant } from "../support.ts";
import { seedEnvironment } from "./support.ts";

const t = useTestDb();
const dir = mkdtempSync(path.join(tmpdir(), "kiln-deploy-cfg-kek-"));
writeFileSync(path.join(dir, "kek"), generateKekText(), { mode: 0o600 });
const keks = new KekSource(path.join(dir, "kek"));
const admin = (x: Tenant) => ({ orgId: x.orgId, role: "admin" as const, actor: "web:root" });

async function auditKinds(orgId: string): Promise<string[]> {
  const rows = await t.db().$queryRaw<{ kind: string }[]>`
    SELECT kind FROM audit_event WHERE org_id = ${orgId}::uuid AND kind LIKE 'environment.%' ORDER BY seq`;
  return rows.map((r) => r.kind);
}

describe("deploy configuration", () => {
  it("is an org admin's: members are refused, another org's admin sees no such environment", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    const env = await seedEnvironment(t.db(), a, "staging");
    const body = deployConfigBody.parse({ workflow_path: ".kiln/deploy.yaml" });
    await expect(setDeployConfig(t.db(), { ...admin(a), role: "member" }, env, body)).rejects.toMatchObject({
      code: "AUTH.FORBIDDEN",
    });
    for (const attempt of [
      () => setDeployConfig(t.db(), admin(b), env, body),
      () => getDeployConfig(t.db(), admin(b), env),
      () => setEnvironmentVariable(t.db(), admin(b), env, { name: "X", value: "1" }),
      () => setEnvironmentSecret(t.db(), keks, admin(b), env, { name: "X", value: "1" }),
      () => listEnvironmentSecrets(t.db(), admin(b), env),
      () => listDeployments(t.db(), admin(b), env),
      () => getDeployConfig(t.db(), admin(b), "not-a-uuid"),
    ])
      await expect(attempt()).rejects.toMatchObject({ code: "ENV.NOT_FOUND" });
    expect(await auditKinds(b.orgId)).toEqual([]);
    const set = await setDeployConfig(t.db(), admin(a), env, body);
    expect(set).toMatchObject({ workflow_path: ".kiln/deploy.yaml", artifact_path: null, updated_by: "web:root" });
    expect(await auditKinds(a.orgId)).toEqual(["environment.deploy_config_set"]);
  });

  it("refuses paths outside the repository and names that are not variables", async () => {
    for (const bad of ["/etc/passwd", "../up.yaml", "a/../../b", ""])
      expect(deployConfigBody.safeParse({ workflow_path: bad }).success).toBe(false);
    expect(deployConfigBody.safeParse({ workflow_path: "ok.yaml", artifact_path: "../x" }).success).toBe(false);
    expect(deployConfigBody.safeParse({ workflow_path: "ok.yaml", extra: 1 }).success).toBe(false);
    const a = await seedTenant(t.db());
    const env = await seedEnvironment(t.db(), a, "staging");
    for (const name of ["KILN_ENVIRONMENT", "1X", "A-B", "x".repeat(101)])
      await expect(setEnvironmentVariable(t.db(), admin(a), env, { name, value: "v" })).rejects.toMatchObject({
        code: "DEPLOY.VARIABLE_INVALID",
      });
    await expect(
      setEnvironmentVariable(t.db(), admin(a), env, { name: "BIG", value: "x".repeat(4097) }),
    ).rejects.toMatchObject({ code: "DEPLOY.VARIABLE_INVALID" });
    const view = await getDeployConfig(t.db(), admin(a), env);
    expect(view.variables).toEqual([]);
    await setEnvironmentVariable(t.db(), admin(a), env, { name: "API_URL", value: "https://x" });
    expect((await getDeployConfig(t.db(), admin(a), env)).variables.map((v) => [v.name, v.value])).toEqual([
      ["API_URL", "https://x"],
    ]);
  });

  it("stores environment secrets under env:<id>, listed by name and version only", async () => {
    const a = await seedTenant(t.db());
    const env = await seedEnvironment(t.db(), a, "production");
    const v = await setEnvironmentSecret(t.db(), keks, admin(a), env, { name: "DEPLOY_KEY", value: "s3cr3t" });
    expect(v).toMatchObject({ name: "DEPLOY_KEY", scope: `env:${env}`, version: 1 });
    const list = await listEnvironmentSecrets(t.db(), { ...admin(a), role: "member" }, env);
    expect(list.map((s) => [s.name, s.version])).toEqual([["DEPLOY_KEY", 1]]);
    expect(JSON.stringify(list)).not.toContain("s3cr3t");
    await expect(
      setEnvironmentSecret(t.db(), keks, { ...admin(a), role: "member" }, env, { name: "X", value: "1" }),
    ).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
  });
});
