// `verify <file> --source <repo> --bundle <bundle.json> --keys <keys.json|pem> --log-key <file>
// [--checkpoint <file>] [--allow-untrusted]`: offline provenance verification (issue 17,
// docs/attestation.md). Never opens the database. `--source` is required (issue 28): an auditor
// checks whose build it is, and a fork PR's build is refused unless untrusted builds are allowed.
import { createHash } from "node:crypto";
import { createReadStream, readFileSync, writeFileSync } from "node:fs";
import {
  attestationBundleForLogIndex,
  engineTlog,
  keyIdOfSpki,
  orgIdOf,
  setProvenanceVisibility,
  verifyOffline,
} from "@kiln/engine";
import { arg, opt, type CliCommand, UsageError } from "./command.ts";

async function sha256File(file: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest("hex");
}

/** GET /v1/attestation/keys's JSON, or a bare SPKI PEM (its key id is derived the same way). */
function trustedKeys(file: string): { keyId: string; spkiPem: string }[] {
  const text = readFileSync(file, "utf8");
  if (text.trimStart().startsWith("-----BEGIN PUBLIC KEY-----")) return [{ keyId: keyIdOfSpki(text), spkiPem: text }];
  const j = JSON.parse(text) as { keys?: { key_id: string; spki_pem: string }[] };
  // The id is recomputed from the key itself: a keys file cannot pair a key with another's id.
  return (j.keys ?? []).map((k) => ({ keyId: keyIdOfSpki(k.spki_pem), spkiPem: k.spki_pem }));
}

/** GET /v1/tlog/verifier-key's answer: the bare key line, or JSON holding it. */
function logKey(file: string): string {
  const text = readFileSync(file, "utf8").trim();
  if (!text.startsWith("{")) return text;
  const j = JSON.parse(text) as Record<string, unknown>;
  const v = j.verifier_key ?? j.verifierKey ?? j.key;
  if (typeof v !== "string") throw new UsageError("--log-key JSON has no verifier_key");
  return v;
}

export const attestationCommands: CliCommand[] = [
  {
    name: "verify",
    usage:
      "verify <file> --source <repo> --bundle <bundle.json> --keys <keys.json|key.pem> --log-key <verifier-key>\n" +
      "      [--checkpoint <file>] [--allow-untrusted]\n" +
      "      offline: DSSE signature, in-toto/SLSA rules, subject = sha256(file), built from <repo> (its clone URL)\n" +
      "      by a trusted run (an untrusted one, e.g. a fork PR, only with --allow-untrusted), inclusion in a signed checkpoint",
    offline: true,
    options: {
      bundle: { type: "string" },
      keys: { type: "string" },
      "log-key": { type: "string" },
      checkpoint: { type: "string" },
      source: { type: "string" },
      "allow-untrusted": { type: "boolean", default: false },
    },
    async run(ctx) {
      const file = arg(ctx, 0, "file");
      const bundle = opt(ctx.values, "bundle");
      const keys = opt(ctx.values, "keys");
      const lk = opt(ctx.values, "log-key");
      const source = opt(ctx.values, "source");
      if (!bundle || !keys || !lk || !source)
        throw new UsageError("--source, --bundle, --keys and --log-key are required");
      const cp = opt(ctx.values, "checkpoint");
      const r = verifyOffline({
        fileSha256: await sha256File(file),
        bundle: JSON.parse(readFileSync(bundle, "utf8")) as unknown,
        keys: trustedKeys(keys),
        logVerifierKey: logKey(lk),
        source,
        allowUntrusted: ctx.values["allow-untrusted"] === true,
        ...(cp ? { checkpoint: readFileSync(cp, "utf8") } : {}),
      });
      if (!r.ok) {
        ctx.out(`FAILED ${r.rule}: ${r.message}`, { ok: false, rule: r.rule, message: r.message });
        return 1;
      }
      const untrusted = r.trust.trustClass === "trusted" ? "" : " UNTRUSTED (not the project's own build)";
      ctx.out(
        `OK ${file}: subject ${r.subject}, built from ${r.trust.source} by ${r.trust.builderId} ` +
          `(${r.trust.trustClass})${untrusted}, log index ${r.logIndex} in a signed tree of ${r.treeSize}`,
        {
          ok: true,
          subject: r.subject,
          source: r.trust.source,
          builder_id: r.trust.builderId,
          builder: r.trust.builder,
          build_type: r.trust.buildType,
          trust_class: r.trust.trustClass,
          log_index: r.logIndex,
          tree_size: r.treeSize,
        },
      );
      return 0;
    },
  },
  {
    name: "attestation bundle",
    usage:
      "attestation bundle <log index> --org <org> [--out <bundle.json>]\n" +
      "      the envelope, leaf salt and proof behind a log entry of this org (or of a public repo): `verify --bundle`'s input",
    options: { org: { type: "string" }, out: { type: "string" } },
    async run(ctx) {
      const raw = arg(ctx, 0, "log index");
      if (!/^(0|[1-9][0-9]{0,15})$/.test(raw)) throw new UsageError("the log index is a non-negative integer");
      const org = opt(ctx.values, "org");
      if (!org) throw new UsageError("--org <org> is required: the envelope is served to its org only");
      const b = await attestationBundleForLogIndex(ctx.db, engineTlog, {
        orgId: await orgIdOf(ctx.db, org),
        index: BigInt(raw),
      });
      const out = opt(ctx.values, "out");
      if (out) writeFileSync(out, `${JSON.stringify(b, null, 2)}\n`, { mode: 0o600 });
      ctx.out(out ? `bundle of log entry ${raw} written to ${out}` : JSON.stringify(b, null, 2), b);
      return 0;
    },
  },
  {
    name: "repo provenance",
    usage:
      "repo provenance <org>/<name> public|private\n" +
      "      public: anyone may fetch this repo's attestation envelopes by log index (default private: its org only)",
    async run(ctx) {
      const full = arg(ctx, 0, "org>/<name");
      const [org, ...rest] = full.split("/");
      const v = arg(ctx, 1, "public|private");
      if (!org || rest.length === 0) throw new UsageError("expected <org>/<name>");
      if (v !== "public" && v !== "private") throw new UsageError("expected public or private");
      const r = await setProvenanceVisibility(ctx.db, {
        orgId: await orgIdOf(ctx.db, org),
        repo: { fullName: full },
        public: v === "public",
        actor: ctx.actor,
      });
      ctx.out(`${full} provenance ${v}${r.changed ? "" : " (unchanged)"}`, r);
      return 0;
    },
  },
];
