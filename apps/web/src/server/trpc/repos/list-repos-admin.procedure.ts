import { listOrgRepos } from "@kiln/engine";
import { publicOrigin } from "../../auth/env.ts";
import { adminProcedure } from "../init.ts";

/** The org's repositories with their last delivery and forge credential (admins; secrets never listed). */
export const listReposAdmin = adminProcedure.query(async ({ ctx }) => ({
  repos: await listOrgRepos(ctx.db, { orgSlug: ctx.tenant.slug }),
  // The URL to paste into the forge's webhook settings; null: the page uses the origin it was served from.
  webhookUrl: publicOrigin() ? `${publicOrigin()}/v1/webhooks/github` : null,
}));
