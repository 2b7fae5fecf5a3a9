import { getTlogStatus } from "./attestation/get-tlog-status.procedure.ts";
import { addHold } from "./retention/add-hold.procedure.ts";
import { listHolds } from "./retention/list-holds.procedure.ts";
import { removeHold } from "./retention/remove-hold.procedure.ts";
import { getJob } from "./jobs/get-job.procedure.ts";
import { getProvenanceRecord } from "./provenance/get-provenance-record.procedure.ts";
import { getRunHistory } from "./provenance/get-run-history.procedure.ts";
import { listQuarantines } from "./provenance/list-quarantines.procedure.ts";
import { listShredLeaks } from "./shredding/list-shred-leaks.procedure.ts";
import { listDeletionEvidence } from "./shredding/list-deletion-evidence.procedure.ts";
import { searchProvenance } from "./provenance/search-provenance.procedure.ts";
import { cancelRun } from "./runs/cancel-run.procedure.ts";
import { getOverview } from "./runs/get-overview.procedure.ts";
import { getRun } from "./runs/get-run.procedure.ts";
import { listRepos } from "./runs/list-repos.procedure.ts";
import { listRuns } from "./runs/list-runs.procedure.ts";
import { retryRun } from "./runs/retry-run.procedure.ts";
import { rerunFailed } from "./runs/rerun-failed.procedure.ts";
import { listFlakyJobs } from "./runs/list-flaky-jobs.procedure.ts";
import { allowEgressHost } from "./tenants/allow-egress-host.procedure.ts";
import { getCapacityRights } from "./tenants/get-capacity-rights.procedure.ts";
import { getIdentity } from "./tenants/get-identity.procedure.ts";
import { getOrgSettings } from "./tenants/get-org-settings.procedure.ts";
import { listOrgs } from "./tenants/list-orgs.procedure.ts";
import { listPools } from "./tenants/list-pools.procedure.ts";
import { lowerHardCap } from "./tenants/lower-hard-cap.procedure.ts";
import { removeEgressHost } from "./tenants/remove-egress-host.procedure.ts";
import { setEntitlement } from "./tenants/set-entitlement.procedure.ts";
import { listApiTokens } from "./tenants/list-api-tokens.procedure.ts";
import { revokeApiToken } from "./tenants/revoke-api-token.procedure.ts";
import { addSchedule } from "./schedules/add-schedule.procedure.ts";
import { listSchedules } from "./schedules/list-schedules.procedure.ts";
import { removeSchedule } from "./schedules/remove-schedule.procedure.ts";
import { listAuditEvents } from "./audit/list-audit-events.procedure.ts";
import { deleteSecret } from "./secrets/delete-secret.procedure.ts";
import { listSecrets } from "./secrets/list-secrets.procedure.ts";
import { setSecret } from "./secrets/set-secret.procedure.ts";
import { createApiToken } from "./tenants/create-api-token.procedure.ts";
import { addMember } from "./members/add-member.procedure.ts";
import { changeMemberRole } from "./members/change-member-role.procedure.ts";
import { listMembers } from "./members/list-members.procedure.ts";
import { removeMember } from "./members/remove-member.procedure.ts";
import { connectRepo } from "./repos/connect-repo.procedure.ts";
import { disconnectRepo } from "./repos/disconnect-repo.procedure.ts";
import { listReposAdmin } from "./repos/list-repos-admin.procedure.ts";
import { getDeployConfig } from "./deployments/get-deploy-config.procedure.ts";
import { setDeployConfig } from "./deployments/set-deploy-config.procedure.ts";
import { setVariable } from "./deployments/set-variable.procedure.ts";
import { deleteVariable } from "./deployments/delete-variable.procedure.ts";
import { listEnvSecrets } from "./deployments/list-env-secrets.procedure.ts";
import { setEnvSecret } from "./deployments/set-env-secret.procedure.ts";
import { deleteEnvSecret } from "./deployments/delete-env-secret.procedure.ts";
import { listDeployments } from "./deployments/list-deployments.procedure.ts";
import { releaseLock } from "./deployments/release-lock.procedure.ts";
import { createEnvironment } from "./environments/create-environment.procedure.ts";
import { getEnvironment } from "./environments/get-environment.procedure.ts";
import { getPromotion } from "./environments/get-promotion.procedure.ts";
import { listApprovalsInbox } from "./environments/list-approvals-inbox.procedure.ts";
import { listEnvironments } from "./environments/list-environments.procedure.ts";
import { listOverrides } from "./environments/list-overrides.procedure.ts";
import { listPromotableArtifacts } from "./environments/list-promotable-artifacts.procedure.ts";
import { overridePromotion } from "./environments/override-promotion.procedure.ts";
import { requestPromotion } from "./environments/request-promotion.procedure.ts";
import { reviewPromotion } from "./environments/review-promotion.procedure.ts";
import { rollbackEnvironment } from "./environments/rollback-environment.procedure.ts";
import { setPolicy } from "./environments/set-policy.procedure.ts";
import { createOrgPool } from "./runners/create-org-pool.procedure.ts";
import { createRegistrationToken } from "./runners/create-registration-token.procedure.ts";
import { listOrgPools } from "./runners/list-org-pools.procedure.ts";
import { listRunners } from "./runners/list-runners.procedure.ts";
import { runnerAction } from "./runners/runner-action.procedure.ts";
import { fleetAction } from "./fleet/fleet-action.procedure.ts";
import { interruptibleShare } from "./fleet/interruptible-share.procedure.ts";
import { listFleet } from "./fleet/list-fleet.procedure.ts";
import { reclaimHost } from "./fleet/reclaim-host.procedure.ts";
import { setPoolInterruptible } from "./fleet/set-pool-interruptible.procedure.ts";
import { getQuota } from "./usage/get-quota.procedure.ts";
import { getUsage } from "./usage/get-usage.procedure.ts";
import { router } from "./init.ts";

export const appRouter = router({
  tenants: {
    list: listOrgs,
    settings: getOrgSettings,
    pools: listPools,
    setEntitlement,
    lowerHardCap,
    capacityRights: getCapacityRights,
    allowEgressHost,
    removeEgressHost,
    identity: getIdentity,
  },
  runs: {
    overview: getOverview,
    list: listRuns,
    repos: listRepos,
    get: getRun,
    cancel: cancelRun,
    retry: retryRun,
    rerunFailed,
    flaky: listFlakyJobs,
  },
  jobs: { get: getJob },
  schedules: { list: listSchedules, add: addSchedule, remove: removeSchedule },
  provenance: {
    search: searchProvenance,
    record: getProvenanceRecord,
    quarantines: listQuarantines,
    runHistory: getRunHistory,
  },
  secrets: { list: listSecrets, set: setSecret, delete: deleteSecret },
  audit: { list: listAuditEvents },
  // Metering and showback (issue 33): any member reads its own org's usage and quota.
  usage: { get: getUsage, quota: getQuota },
  tokens: { list: listApiTokens, create: createApiToken, revoke: revokeApiToken },
  // The admin console (issue 19): admins only, each refused in the tenant query for everyone else.
  repos: { list: listReposAdmin, connect: connectRepo, disconnect: disconnectRepo },
  members: { list: listMembers, add: addMember, setRole: changeMemberRole, remove: removeMember },
  tlog: { status: getTlogStatus },
  // Environments, gates, promotions (issue 18): the approvals inbox and the environment page.
  environments: {
    list: listEnvironments,
    get: getEnvironment,
    create: createEnvironment,
    setPolicy,
    rollback: rollbackEnvironment,
    artifacts: listPromotableArtifacts,
  },
  promotions: {
    get: getPromotion,
    inbox: listApprovalsInbox,
    request: requestPromotion,
    review: reviewPromotion,
    override: overridePromotion,
    overrides: listOverrides,
  },
  // Runners an org owns (issue 22): admins only, refused in the tenant query for everyone else.
  runners: {
    list: listRunners,
    act: runnerAction,
    createRegistrationToken,
    pools: listOrgPools,
    createPool: createOrgPool,
  },
  // Retention holds (issue 21): admins and auditors.
  retention: { holds: listHolds, addHold, removeHold },
  // The fleet view and interruptible capacity (issue 22, docs/adr/0035): admins; `all` for operators.
  fleet: {
    list: listFleet,
    act: fleetAction,
    reclaim: reclaimHost,
    setInterruptible: setPoolInterruptible,
    share: interruptibleShare,
  },
  // Crypto-shredding (issue 21): the sampler's open leaks and the destroyer's evidence.
  shredding: { leaks: listShredLeaks, evidence: listDeletionEvidence },
  // Deploy runs and deployment locks (issue 18, docs/adr/0033).
  deployments: {
    config: getDeployConfig,
    setConfig: setDeployConfig,
    setVariable,
    deleteVariable,
    secrets: listEnvSecrets,
    setSecret: setEnvSecret,
    deleteSecret: deleteEnvSecret,
    list: listDeployments,
    releaseLock,
  },
});

export type AppRouter = typeof appRouter;
