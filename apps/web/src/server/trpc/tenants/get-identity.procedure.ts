import { listIdTokenKeys } from "@kiln/engine";
import { services } from "../../context.ts";
import { readProcedure } from "../init.ts";

/**
 * Workload identity (issue 16, ADR 0024): the issuer a relying party pins and the signing keys it
 * will meet. Keys are platform-wide and public (they are in the JWKS), so every member may read them;
 * `npm run kiln -- identity rotate-key` changes them.
 */
export const getIdentity = readProcedure.query(async ({ ctx }) => {
  const { issuer } = services().identity();
  const keys = await listIdTokenKeys(ctx.db);
  return {
    issuer,
    discoveryUrl: `${issuer}/.well-known/openid-configuration`,
    jwksUrl: `${issuer}/.well-known/jwks.json`,
    keys: keys.filter((k) => k.published),
  };
});
