// Public API of the tenants capability (conventions 4).
export { createOrg, addRepo, addMember, createApiToken, createAgentToken } from "./admin.ts";
export {
  setEntitlement,
  setEntitlementAsPlatformAdmin,
  lowerOwnHardCap,
  listEntitlements,
  type EntitlementRow,
} from "./entitlements.ts";
export { setPlatformAdmin, listPlatformAdmins, isPlatformAdmin } from "./platform-admins.ts";
