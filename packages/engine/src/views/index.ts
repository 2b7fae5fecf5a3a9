// Read-side use cases for the dashboard (issue 6). Every function takes a TenantScope, which only
// resolveTenant can make, and filters by its org_id in the query itself.
export {
  resolveTenant,
  scopeOfApiCaller,
  ALL_ROLES,
  OPERATOR_ROLES,
  ADMIN_ROLES,
  type TenantScope,
  type OrgScope,
} from "./tenants/resolve-tenant.ts";
export { resolveJobTenant } from "./tenants/resolve-job-tenant.ts";
export { listMemberships, type MembershipView } from "./tenants/list-memberships.ts";
export { findSignInUser, type SignInUser } from "./tenants/find-sign-in-user.ts";
export {
  getOrgSettings,
  type OrgSettingsView,
  type PoolEntitlementView,
  type EgressEntryView,
  type SettingsChange,
} from "./tenants/get-org-settings.ts";
export { listRuns, type RunRow, type RunPage } from "./runs/list-runs.ts";
export { listRepoRuns } from "./runs/list-repo-runs.ts";
export { runFilters, RUN_TRIGGERS, type RunFilters } from "@kiln/domain";
export { encodeRunCursor, decodeRunCursor } from "./runs/run-cursor.ts";
export { listRepos, type RepoOption } from "./runs/list-repos.ts";
export { getOrgOverview, type OrgOverview, type ActiveJob, type FailureRatio } from "./runs/get-org-overview.ts";
export { getRunPage, type RunPageView, type ArtifactView, type JobStepsView } from "./runs/get-run-page.ts";
export { findFirstFailure, type FirstFailure } from "./runs/first-failure.ts";
export { getJobHeader, type JobHeaderView } from "./jobs/get-job-header.ts";
