import { connectRepo as connectRepoUseCase } from "@kiln/engine";
import { z } from "zod";
import { env, webForgeConfig } from "../../env.ts";
import { adminProcedure } from "../init.ts";

// Shapes only; the engine owns the rules (name form, clone-URL policy, branch) and their messages.
const connectRepoInput = z.object({
  name: z.string().trim().min(3, "enter owner/name").max(300),
  cloneUrl: z.string().trim().min(1, "enter the clone URL").max(2000),
  workflowPath: z.string().trim().min(1).max(500).default(".kiln/workflow.yaml"),
  defaultBranch: z.string().trim().min(1).max(255).default("main"),
});

/** Connects a repo and answers its webhook secret once (audited as repo.connected). */
export const connectRepo = adminProcedure
  .input(connectRepoInput)
  .mutation(({ ctx, input }) =>
    connectRepoUseCase(
      ctx.db,
      { orgSlug: ctx.tenant.slug, ...input, actor: `web:${ctx.tenant.login}` },
      { localReposRoot: env().KILN_LOCAL_REPOS_ROOT ?? null },
      webForgeConfig(),
    ),
  );
