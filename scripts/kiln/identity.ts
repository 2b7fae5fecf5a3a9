// `identity rotate-key` and `identity keys` (issue 16, docs/adr/0024-workload-identity.md).
import path from "node:path";
import {
  type IdentityKek,
  listIdTokenKeys,
  readIdentityKek,
  rotateIdTokenKey,
  setUntrustedIdTokens,
} from "@kiln/engine";
import { arg, type CliCommand, opt, UsageError } from "./command.ts";

/**
 * The identity KEK file the web server uses (apps/web env.ts: KILN_IDENTITY_KEK_FILE, else
 * <KILN_DATA_DIR>/identity-kek). Only read here, never created: a key sealed under a KEK the web
 * does not have would stop every mint.
 */
function kekFile(): string {
  return (
    process.env.KILN_IDENTITY_KEK_FILE ||
    path.join(path.resolve(process.env.KILN_DATA_DIR ?? ".kiln-data"), "identity-kek")
  );
}

/** The web server's identity KEK, for the commands that seal under it (ID-token and job-token keys). */
export async function readCliIdentityKek(): Promise<IdentityKek> {
  const file = kekFile();
  return readIdentityKek(file).catch((err: unknown) => {
    throw new Error(
      `cannot read the identity KEK ${file} (set KILN_IDENTITY_KEK_FILE to the web server's): ${String(err)}`,
    );
  });
}

export const identityCommands: CliCommand[] = [
  {
    name: "repo id-tokens",
    usage:
      "repo id-tokens <org>/<name> --untrusted on|off   (ID tokens for untrusted runs: fork PRs, non-members; off by default)",
    options: { untrusted: { type: "string" } },
    async run(ctx) {
      const fullName = arg(ctx, 0, "org>/<name");
      const v = opt(ctx.values, "untrusted");
      if (v !== "on" && v !== "off") throw new UsageError("repo id-tokens needs --untrusted on|off");
      const r = await setUntrustedIdTokens(ctx.db, { fullName, enabled: v === "on", actor: ctx.actor });
      ctx.out(
        `${r.fullName}: untrusted runs ${r.enabled ? "get" : "get no"} ID tokens${r.changed ? "" : " (unchanged)"}`,
        r,
      );
      return 0;
    },
  },
  {
    name: "identity rotate-key",
    usage:
      "identity rotate-key         (a new ID-token signing key signs at once; the old one stays in the JWKS until its last token expires)",
    async run(ctx) {
      const kek = await readCliIdentityKek();
      const r = await rotateIdTokenKey(ctx.db, kek, { actor: ctx.actor });
      ctx.out(
        `ID tokens are now signed with key ${r.kid} (sealed under KEK ${kek.id})` +
          (r.retired ? `; ${r.retired} stays in the JWKS until ${r.retiredVerifyUntil}` : ""),
        { ...r, kek_id: kek.id },
      );
      return 0;
    },
  },
  {
    name: "identity keys",
    usage: "identity keys               (ID-token signing keys: kid, created, retired, published until)",
    async run(ctx) {
      const keys = await listIdTokenKeys(ctx.db);
      const line = (k: (typeof keys)[number]) =>
        `${k.kid}  created ${k.createdAt}  ${
          k.retiredAt
            ? `retired ${k.retiredAt}  in JWKS until ${k.verifyUntil}${k.published ? "" : " (dropped)"}`
            : "signing"
        }`;
      ctx.out(keys.length ? keys.map(line).join("\n") : "no ID-token keys yet (the first mint creates one)", keys);
      return 0;
    },
  },
];
