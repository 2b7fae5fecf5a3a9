import { listSecrets as listSecretsUseCase } from "@kiln/engine";
import { adminProcedure } from "../init.ts";

/** Every secret of the org, org- and repo-scoped: names, versions, who and when; never values. */
export const listSecrets = adminProcedure.query(({ ctx }) => listSecretsUseCase(ctx.db, { orgId: ctx.tenant.orgId }));
