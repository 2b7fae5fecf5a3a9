import { listMembers as listMembersUseCase } from "@kiln/engine";
import { adminProcedure } from "../init.ts";

/** The org's members with their forge ids and roles (admins only). */
export const listMembers = adminProcedure.query(({ ctx }) => listMembersUseCase(ctx.db, { orgSlug: ctx.tenant.slug }));
