import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attestJob } from "../../src/attestation/attest-job.ts";
import { attestationBundleForArtifact, type AttestationBundle } from "../../src/attestation/attestation-bundle.ts";
import { listAttestationKeys } from "../../src/attestation/attestation-keys.ts";
import { engineTlog } from "../../src/attestation/tlog-adapter.ts";
import { logVerifierKey } from "../../src/attestation/tlog/tlog-key.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { bytes, claim, claimsOf, PRODUCER_CONSUMER, publish, useS3 } from "../artifacts/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import { attestorDeps, checkpoint, useSigner } from "./support.ts";

// `npm run kiln -- verify` as an auditor runs it: a subprocess, files only, no database.
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();
let dir = "";
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-verify-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function kiln(args: string[], database?: string): Promise<{ code: number; stdout: string }> {
  // No DATABASE_URL for verify: the command must not need one.
  const { DATABASE_URL: _d, ...inherited } = process.env;
  const env = database ? { ...inherited, DATABASE_URL: database } : inherited;
  return new Promise((resolve) =>
    execFile(process.execPath, ["--import", "tsx", "scripts/kiln.ts", ...args], { cwd: ROOT, env }, (err, stdout) =>
      resolve({ code: err ? Number(err.code ?? 1) : 0, stdout }),
    ),
  );
}

describe("kiln verify", () => {
  it("accepts the artifact with its bundle, and names the rule each tampering breaks", {
    timeout: 240_000,
  }, async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const p = (await claim(t.db(), s))!;
    const data = bytes(300_000, 9);
    const generationId = await publish(t.db(), s3.store(), p, "app", data);
    await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(p), outcome: "success", sandboxDestroyed: true });
    await attestJob(attestorDeps(t.db(), pool(), s3.store(), signer()), { jobId: p.jobId, epoch: 1 });
    await checkpoint(t.db());
    const bundle = await attestationBundleForArtifact(t.db(), engineTlog, {
      orgId: tenant.orgId,
      artifactId: generationId,
    });

    const f = (n: string) => path.join(dir, n);
    await writeFile(f("app.jar"), data);
    await writeFile(f("bundle.json"), JSON.stringify(bundle));
    await writeFile(f("keys.json"), JSON.stringify({ keys: await listAttestationKeys(t.db()) }));
    await writeFile(f("log.key"), `${await logVerifierKey(t.db())}\n`);
    await writeFile(f("checkpoint"), bundle.transparency_log.inclusion_proof!.checkpoint);
    const common = ["--keys", f("keys.json"), "--log-key", f("log.key"), "--source", "file:///nonexistent", "--json"];
    const verify = (file: string, b = f("bundle.json"), extra: string[] = []) =>
      kiln(["verify", file, "--bundle", b, ...common, ...extra]);

    const ok = await verify(f("app.jar"), f("bundle.json"), ["--checkpoint", f("checkpoint")]);
    expect(ok.code, ok.stdout).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({
      ok: true,
      subject: "app",
      trust_class: "trusted",
      builder: "platform",
      builder_id: "https://kiln.test/builders/process",
    });

    // The bundle by log index from the server's shell (issue 28): the org's own only, then verified.
    const index = bundle.transparency_log.log_index;
    const fetched = await kiln(
      ["attestation", "bundle", index, "--org", tenant.slug, "--out", f("by-index.json"), "--json"],
      t.url(),
    );
    expect(fetched.code, fetched.stdout).toBe(0);
    const byIndex = await verify(f("app.jar"), f("by-index.json"));
    expect(JSON.parse(byIndex.stdout)).toMatchObject({ ok: true, log_index: index });
    const stranger = await seedTenant(t.db());
    const refused = await kiln(["attestation", "bundle", index, "--org", stranger.slug, "--json"], t.url());
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ error: { code: "ATTESTATION.NOT_FOUND" } });
    expect(refused.stdout).not.toContain("dsseEnvelope");

    const rule = async (r: Promise<{ code: number; stdout: string }>) => {
      const x = await r;
      expect(x.code, x.stdout).toBe(1);
      return (JSON.parse(x.stdout) as { rule: string }).rule;
    };
    await writeFile(f("other.jar"), Buffer.concat([data, Buffer.from("!")]));
    expect(await rule(verify(f("other.jar")))).toBe("subject.digest");

    const tampered = (mut: (b: AttestationBundle) => void) => {
      const c = structuredClone(bundle);
      mut(c);
      return c;
    };
    const write = async (name: string, b: AttestationBundle) => {
      await writeFile(f(name), JSON.stringify(b));
      return f(name);
    };
    const payload = JSON.parse(Buffer.from(bundle.bundle.dsseEnvelope.payload, "base64").toString("utf8"));
    payload.subject[0].digest.sha256 = "0".repeat(64);
    const forged = await write(
      "forged.json",
      tampered((b) => {
        b.bundle.dsseEnvelope.payload = Buffer.from(JSON.stringify(payload)).toString("base64");
      }),
    );
    expect(await rule(verify(f("app.jar"), forged))).toBe("dsse.signature");
    const badProof = await write(
      "proof.json",
      tampered((b) => {
        const h = Buffer.from(b.transparency_log.leaf_hash, "base64");
        h[0] = (h[0] ?? 0) ^ 1;
        b.transparency_log.leaf_hash = h.toString("base64");
      }),
    );
    expect(await rule(verify(f("app.jar"), badProof))).toBe("tlog.leaf_hash");
    const badCp = await write(
      "cp.json",
      tampered((b) => {
        b.transparency_log.inclusion_proof!.checkpoint = b.transparency_log.inclusion_proof!.checkpoint.replace(
          /\n(\d+)\n/,
          (_m, n) => `\n${Number(n) + 1}\n`,
        );
      }),
    );
    expect(await rule(verify(f("app.jar"), badCp))).toBe("tlog.checkpoint");
    await writeFile(f("other-keys.json"), JSON.stringify({ keys: [] }));
    const noKey = await kiln([
      "verify",
      f("app.jar"),
      "--bundle",
      f("bundle.json"),
      "--keys",
      f("other-keys.json"),
      "--log-key",
      f("log.key"),
      "--source",
      "file:///nonexistent",
      "--json",
    ]);
    expect(JSON.parse(noKey.stdout)).toMatchObject({ ok: false, rule: "key.unknown" });
  });

  it("refuses a fork's (untrusted) build for the project's source unless told to allow it, and names its class", {
    timeout: 120_000,
  }, async () => {
    // The attacker: a non-member's fork PR run of the victim's repo, on a platform host, attested.
    const tenant = await seedTenant(t.db(), { cloneUrl: "https://git.example/acme/app.git" });
    const s = await newSession(t.db(), tenant, 100, "host", "microvm");
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER), "untrusted", "refs/heads/main");
    const p = (await claim(t.db(), s))!;
    const data = bytes(1000, 3);
    const generationId = await publish(t.db(), s3.store(), p, "app", data);
    await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(p), outcome: "success", sandboxDestroyed: true });
    await attestJob(attestorDeps(t.db(), pool(), s3.store(), signer()), { jobId: p.jobId, epoch: 1 });
    await checkpoint(t.db());
    const bundle = await attestationBundleForArtifact(t.db(), engineTlog, {
      orgId: tenant.orgId,
      artifactId: generationId,
    });
    const f = (n: string) => path.join(dir, `fork-${n}`);
    await writeFile(f("app.jar"), data);
    await writeFile(f("bundle.json"), JSON.stringify(bundle));
    await writeFile(f("keys.json"), JSON.stringify({ keys: await listAttestationKeys(t.db()) }));
    await writeFile(f("log.key"), `${await logVerifierKey(t.db())}\n`);
    const verify = (extra: string[]) =>
      kiln([
        "verify",
        f("app.jar"),
        "--bundle",
        f("bundle.json"),
        "--keys",
        f("keys.json"),
        "--log-key",
        f("log.key"),
        "--json",
        ...extra,
      ]);

    const refused = await verify(["--source", "https://github.com/acme/app"]);
    expect(refused.code, refused.stdout).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false, rule: "provenance.source" });
    const untrusted = await verify(["--source", "https://git.example/acme/app"]);
    expect(untrusted.code, untrusted.stdout).toBe(1);
    expect(JSON.parse(untrusted.stdout)).toMatchObject({ ok: false, rule: "provenance.untrusted" });
    expect(JSON.parse(untrusted.stdout).message).toContain("/builders/untrusted/");

    const allowed = await verify(["--source", "git.example/acme/app.git", "--allow-untrusted"]);
    expect(allowed.code, allowed.stdout).toBe(0);
    expect(JSON.parse(allowed.stdout)).toMatchObject({
      ok: true,
      trust_class: "untrusted",
      builder: "untrusted",
      builder_id: "https://kiln.test/builders/untrusted/process",
      build_type: "https://kiln.dev/attestation/buildtypes/untrusted-workflow/v1",
    });
    // Without --source there is nothing to check whose build it is: a usage error, not an OK.
    const bare = await verify([]);
    expect(bare.code).toBe(2);
  });
});
