// Public API of the environments capability (issue 18, docs/adr/0032-environments-gates-promotions.md).
export { movePointer, type PointerMove, type PointerMoved } from "./move-pointer.ts";
export { builderPrefixFor, type EnvActor, type EnvDeps } from "./env-actor.ts";
export { PolicyCache } from "./policy-cache.ts";
export {
  findEnvironmentByName,
  getEnvironment,
  listEnvironments,
  listOrgEnvironments,
  type EnvironmentView,
} from "./environment-store.ts";
export { createEnvironment, type CreateEnvironmentInput } from "./create-environment.ts";
export { getPolicyVersion, setEnvironmentPolicy, type PolicyVersionView } from "./set-policy.ts";
export { requestPromotion, requestRollback } from "./request-promotion.ts";
export { reviewPromotion } from "./review-promotion.ts";
export { redecideSoakingPromotions, type RedecideReport } from "./redecide-soaking.ts";
export { overridePromotion, MAX_OVERRIDE_SECONDS } from "./override-promotion.ts";
export {
  getPromotion,
  listEnvironmentPromotions,
  listOverrides,
  listPendingPromotions,
  type OverrideView,
  type PromotionView,
} from "./promotion-view.ts";
export { listPointerMoves, type PointerMoveView } from "./pointer-history.ts";
export type { ArtifactRef } from "./resolve-artifact.ts";
export {
  listPromotableArtifacts,
  PROMOTABLE_LIMIT_MAX,
  type PromotableArtifact,
} from "./promotable-artifacts.ts";
export { memberActor, orgIdBySlug } from "./member-actor.ts";
