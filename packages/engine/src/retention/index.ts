// Public API of the retention capability (issue 21, docs/adr/0036-retention-by-provenance.md).
export {
  runRetentionPass,
  planRetentionPass,
  type RetentionPassOptions,
  type RetentionPassReport,
} from "./run-retention.ts";
export {
  addRetentionHold,
  removeRetentionHold,
  listRetentionHolds,
  type RetentionActor,
  type RetentionHoldView,
} from "./retention-holds.ts";
export {
  getOrgRetention,
  setOrgRetentionWindow,
  setReleasePatterns,
  type OrgRetentionView,
} from "./retention-settings.ts";
export { applyBucketLifecycle, BUCKET_LIFECYCLE_RULES, type LifecycleOutcome } from "./bucket-lifecycle.ts";
// The CLI names orgs by slug.
export { orgIdOf } from "../tenants/index.ts";
