import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "@/server/trpc/router.ts";

type Out = inferRouterOutputs<AppRouter>;
export type RunPageData = Out["runs"]["get"];
type RunData = RunPageData["run"];
export type JobData = RunData["jobs"][number];
export type OverviewData = Out["runs"]["overview"];
export type RunRowData = Out["runs"]["list"]["runs"][number];
export type Membership = Out["tenants"]["list"][number];
export type OrgSettingsData = Out["tenants"]["settings"];
export type PoolEntitlementData = OrgSettingsData["entitlements"][number];
export type SettingsChangeData = OrgSettingsData["changes"][number];
// The admin console (issue 19).
export type ReposAdminData = Out["repos"]["list"];
export type MemberData = Out["members"]["list"][number];
// The fleet view (issue 22).
export type FleetHostData = Out["fleet"]["list"][number];
