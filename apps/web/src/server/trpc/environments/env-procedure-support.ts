import type { EnvDeps } from "@kiln/engine";
import { z } from "zod";
import { envDeps } from "../../environments.ts";

// Shared by the environments procedures (issue 18): ids are uuids (a malformed one is a 400 before
// any query), and the decision service's deps come from the context in tests.
export const uuid = z.uuid("not an id");

export function depsOf(ctx: { envDeps?: EnvDeps }): EnvDeps {
  return ctx.envDeps ?? envDeps();
}
