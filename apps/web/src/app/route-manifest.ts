import type { RouteModules } from "@/server/http/openapi/build-document.ts";

// Every REST route file of the web app (under src/app, except the dashboard's own /api/trpc and
// /api/auth, and the two that serve the documents: server/http/openapi/document-routes.ts), by its
// directory. The OpenAPI documents are built from these modules' route specs; openapi-document.test.ts
// fails when a route file is missing here or undocumented. Adding a route is this one line. Lazy
// imports: building a document loads the modules, serving a route does not.
export const ROUTE_MODULES: RouteModules = {
  healthz: () => import("@/app/healthz/route.ts"),
  metrics: () => import("@/app/metrics/route.ts"),
  "v1/webhooks/github": () => import("@/app/v1/webhooks/github/route.ts"),
  "v1/orgs/[org]/repos": () => import("@/app/v1/orgs/[org]/repos/route.ts"),
  "v1/repos/[repoId]/workflow-runs": () => import("@/app/v1/repos/[repoId]/workflow-runs/route.ts"),
  "v1/workflow-runs/[runId]": () => import("@/app/v1/workflow-runs/[runId]/route.ts"),
  "v1/workflow-runs/[runId]/jobs": () => import("@/app/v1/workflow-runs/[runId]/jobs/route.ts"),
  "v1/workflow-runs/[runId]/cancel": () => import("@/app/v1/workflow-runs/[runId]/cancel/route.ts"),
  "v1/workflow-runs/[runId]/retry": () => import("@/app/v1/workflow-runs/[runId]/retry/route.ts"),
  "v1/workflow-runs/[runId]/egress": () => import("@/app/v1/workflow-runs/[runId]/egress/route.ts"),
  "v1/workflow-runs/[runId]/rerun-failed": () => import("@/app/v1/workflow-runs/[runId]/rerun-failed/route.ts"),
  "v1/repos/[repoId]/flaky-jobs": () => import("@/app/v1/repos/[repoId]/flaky-jobs/route.ts"),
  "v1/jobs/[jobId]/artifacts": () => import("@/app/v1/jobs/[jobId]/artifacts/route.ts"),
  "v1/jobs/[jobId]/artifacts/[name]": () => import("@/app/v1/jobs/[jobId]/artifacts/[name]/route.ts"),
  "v1/artifacts/[artifactId]/download": () => import("@/app/v1/artifacts/[artifactId]/download/route.ts"),
  "v1/jobs/[jobId]/logs/events": () => import("@/app/v1/jobs/[jobId]/logs/events/route.ts"),
  "v1/jobs/[jobId]/logs/raw": () => import("@/app/v1/jobs/[jobId]/logs/raw/route.ts"),
  "v1/pools": () => import("@/app/v1/pools/route.ts"),
  // Workload identity (docs/adr/0024): OIDC discovery, JWKS, introspection.
  ".well-known/openid-configuration": () => import("@/app/.well-known/openid-configuration/route.ts"),
  ".well-known/jwks.json": () => import("@/app/.well-known/jwks.json/route.ts"),
  "v1/oauth/introspect": () => import("@/app/v1/oauth/introspect/route.ts"),
  // Secrets and the audit trail (docs/adr/0025).
  // Runners an org owns (issue 22, docs/adr/0034).
  "v1/orgs/[org]/pools": () => import("@/app/v1/orgs/[org]/pools/route.ts"),
  "v1/orgs/[org]/runners": () => import("@/app/v1/orgs/[org]/runners/route.ts"),
  "v1/orgs/[org]/runners/registration-tokens": () => import("@/app/v1/orgs/[org]/runners/registration-tokens/route.ts"),
  "v1/orgs/[org]/runners/[runnerId]": () => import("@/app/v1/orgs/[org]/runners/[runnerId]/route.ts"),
  "v1/orgs/[org]/runners/[runnerId]/actions": () => import("@/app/v1/orgs/[org]/runners/[runnerId]/actions/route.ts"),
  "v1/orgs/[org]/secrets": () => import("@/app/v1/orgs/[org]/secrets/route.ts"),
  "v1/orgs/[org]/secrets/[name]": () => import("@/app/v1/orgs/[org]/secrets/[name]/route.ts"),
  "v1/repos/[repoId]/secrets": () => import("@/app/v1/repos/[repoId]/secrets/route.ts"),
  "v1/repos/[repoId]/secrets/[name]": () => import("@/app/v1/repos/[repoId]/secrets/[name]/route.ts"),
  "v1/orgs/[org]/audit-events": () => import("@/app/v1/orgs/[org]/audit-events/route.ts"),
  // Metering and showback (docs/adr/0045).
  "v1/orgs/[org]/usage": () => import("@/app/v1/orgs/[org]/usage/route.ts"),
  // Retention by provenance (docs/adr/0036).
  "v1/orgs/[org]/retention": () => import("@/app/v1/orgs/[org]/retention/route.ts"),
  "v1/orgs/[org]/retention/plan": () => import("@/app/v1/orgs/[org]/retention/plan/route.ts"),
  "v1/orgs/[org]/retention/holds": () => import("@/app/v1/orgs/[org]/retention/holds/route.ts"),
  "v1/artifacts/[artifactId]/hold": () => import("@/app/v1/artifacts/[artifactId]/hold/route.ts"),
  "v1/repos/[repoId]/provenance-visibility": () => import("@/app/v1/repos/[repoId]/provenance-visibility/route.ts"),
  "v1/repos/[repoId]/release-patterns": () => import("@/app/v1/repos/[repoId]/release-patterns/route.ts"),
  // Crypto-shredding (docs/adr/0037).
  "v1/orgs/[org]/deletion-evidence": () => import("@/app/v1/orgs/[org]/deletion-evidence/route.ts"),
  "v1/orgs/[org]/shred-leaks": () => import("@/app/v1/orgs/[org]/shred-leaks/route.ts"),
  // Provenance (docs/adr/0027).
  "v1/attestation/keys": () => import("@/app/v1/attestation/keys/route.ts"),
  "v1/attestations": () => import("@/app/v1/attestations/route.ts"),
  "v1/artifacts/[artifactId]/attestation": () => import("@/app/v1/artifacts/[artifactId]/attestation/route.ts"),
  // Schedules (docs/adr/0031).
  // Deploy runs and deployment locks (issue 18, docs/adr/0033).
  "v1/environments/[envId]/deploy-config": () => import("@/app/v1/environments/[envId]/deploy-config/route.ts"),
  "v1/environments/[envId]/variables/[name]": () => import("@/app/v1/environments/[envId]/variables/[name]/route.ts"),
  "v1/environments/[envId]/secrets": () => import("@/app/v1/environments/[envId]/secrets/route.ts"),
  "v1/environments/[envId]/secrets/[name]": () => import("@/app/v1/environments/[envId]/secrets/[name]/route.ts"),
  "v1/environments/[envId]/deployments": () => import("@/app/v1/environments/[envId]/deployments/route.ts"),
  "v1/environments/[envId]/deployment-lock/release": () =>
    import("@/app/v1/environments/[envId]/deployment-lock/release/route.ts"),
  "v1/schedules": () => import("@/app/v1/schedules/route.ts"),
  "v1/schedules/[scheduleId]": () => import("@/app/v1/schedules/[scheduleId]/route.ts"),
  "v1/repos/[repoId]/schedules": () => import("@/app/v1/repos/[repoId]/schedules/route.ts"),
  // Environments, gates, promotions (docs/adr/0032).
  "v1/repos/[repoId]/environments": () => import("@/app/v1/repos/[repoId]/environments/route.ts"),
  "v1/environments/[envId]/promotions": () => import("@/app/v1/environments/[envId]/promotions/route.ts"),
  "v1/environments/[envId]/rollbacks": () => import("@/app/v1/environments/[envId]/rollbacks/route.ts"),
  "v1/environments/[envId]/policy": () => import("@/app/v1/environments/[envId]/policy/route.ts"),
  "v1/environments/[envId]/artifacts": () => import("@/app/v1/environments/[envId]/artifacts/route.ts"),
  "v1/promotions/[promotionId]": () => import("@/app/v1/promotions/[promotionId]/route.ts"),
  "v1/promotions/[promotionId]/approvals": () => import("@/app/v1/promotions/[promotionId]/approvals/route.ts"),
  "v1/promotions/[promotionId]/overrides": () => import("@/app/v1/promotions/[promotionId]/overrides/route.ts"),
  // The forge loop (docs/adr/0028).
  "v1/repos/[repoId]/forge": () => import("@/app/v1/repos/[repoId]/forge/route.ts"),
  // The fleet view and interruptible capacity (docs/adr/0035).
  "v1/orgs/[org]/fleet": () => import("@/app/v1/orgs/[org]/fleet/route.ts"),
  "v1/orgs/[org]/interruptible-share": () => import("@/app/v1/orgs/[org]/interruptible-share/route.ts"),
  "v1/pools/[pool]/hosts/[host]/reclaim": () => import("@/app/v1/pools/[pool]/hosts/[host]/reclaim/route.ts"),
  "v1/pools/[pool]/interruptible": () => import("@/app/v1/pools/[pool]/interruptible/route.ts"),
  // The transparency log (docs/adr/0026): public, no token.
  "tlog/checkpoint": () => import("@/app/tlog/checkpoint/route.ts"),
  "tlog/tile/[...path]": () => import("@/app/tlog/tile/[...path]/route.ts"),
  "v1/tlog/verifier-key": () => import("@/app/v1/tlog/verifier-key/route.ts"),
  "v1/tlog/entries/[index]": () => import("@/app/v1/tlog/entries/[index]/route.ts"),
  "v1/tlog/entries/[index]/bundle": () => import("@/app/v1/tlog/entries/[index]/bundle/route.ts"),
  "v1/tlog/proofs/inclusion": () => import("@/app/v1/tlog/proofs/inclusion/route.ts"),
  "v1/tlog/proofs/consistency": () => import("@/app/v1/tlog/proofs/consistency/route.ts"),
  // The agent protocol: its own document (/v1/agent/openapi.json), docs/adr/0029.
  "v1/agent/sessions": () => import("@/app/v1/agent/sessions/route.ts"),
  "v1/agent/registrations": () => import("@/app/v1/agent/registrations/route.ts"),
  "v1/agent/claims": () => import("@/app/v1/agent/claims/route.ts"),
  "v1/agent/sessions/[sessionId]/stats": () => import("@/app/v1/agent/sessions/[sessionId]/stats/route.ts"),
  "v1/agent/jobs/[jobId]/heartbeat": () => import("@/app/v1/agent/jobs/[jobId]/heartbeat/route.ts"),
  "v1/agent/jobs/[jobId]/complete": () => import("@/app/v1/agent/jobs/[jobId]/complete/route.ts"),
  "v1/agent/jobs/[jobId]/logs": () => import("@/app/v1/agent/jobs/[jobId]/logs/route.ts"),
  "v1/agent/jobs/[jobId]/logs/seal": () => import("@/app/v1/agent/jobs/[jobId]/logs/seal/route.ts"),
  "v1/agent/jobs/[jobId]/egress-events": () => import("@/app/v1/agent/jobs/[jobId]/egress-events/route.ts"),
  "v1/agent/jobs/[jobId]/artifacts/uploads": () => import("@/app/v1/agent/jobs/[jobId]/artifacts/uploads/route.ts"),
  "v1/agent/jobs/[jobId]/artifacts/uploads/[generationId]/parts": () =>
    import("@/app/v1/agent/jobs/[jobId]/artifacts/uploads/[generationId]/parts/route.ts"),
  "v1/agent/jobs/[jobId]/artifacts/uploads/[generationId]/complete": () =>
    import("@/app/v1/agent/jobs/[jobId]/artifacts/uploads/[generationId]/complete/route.ts"),
  "v1/agent/jobs/[jobId]/artifacts/downloads": () => import("@/app/v1/agent/jobs/[jobId]/artifacts/downloads/route.ts"),
  "v1/agent/jobs/[jobId]/caches/restore": () => import("@/app/v1/agent/jobs/[jobId]/caches/restore/route.ts"),
  "v1/agent/jobs/[jobId]/caches/saves": () => import("@/app/v1/agent/jobs/[jobId]/caches/saves/route.ts"),
  "v1/agent/jobs/[jobId]/caches/saves/[entryId]/complete": () =>
    import("@/app/v1/agent/jobs/[jobId]/caches/saves/[entryId]/complete/route.ts"),
  "v1/agent/jobs/[jobId]/caches/stats": () => import("@/app/v1/agent/jobs/[jobId]/caches/stats/route.ts"),
  "v1/agent/jobs/[jobId]/secrets": () => import("@/app/v1/agent/jobs/[jobId]/secrets/route.ts"),
  "v1/agent/jobs/[jobId]/id-token": () => import("@/app/v1/agent/jobs/[jobId]/id-token/route.ts"),
  "v1/agent/jobs/[jobId]/source-credential": () => import("@/app/v1/agent/jobs/[jobId]/source-credential/route.ts"),
};
