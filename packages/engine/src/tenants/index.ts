// Public API of the tenants capability (conventions 4).
export { createOrg, addRepo, createApiToken, createAgentToken, orgSlugOf } from "./admin.ts";
export { createMemberApiToken } from "./member-token.ts";
export { addMember, listMembers, changeMemberRole, removeMember, type MemberView } from "./member-admin.ts";
export { listOrgRepos, connectRepo, disconnectRepo, type RepoAdminView, type LastDelivery } from "./repo-admin.ts";
export type { ForgeCredentialState } from "./forge-credential-state.ts";
export {
  setEntitlement,
  setEntitlementAsPlatformAdmin,
  lowerOwnHardCap,
  listEntitlements,
  type EntitlementRow,
} from "./entitlements.ts";
export { setPlatformAdmin, listPlatformAdmins, isPlatformAdmin } from "./platform-admins.ts";
