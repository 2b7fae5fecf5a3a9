// Workload identity (issue 16): the ID token's claims, lifetime and discovery document.
export {
  ID_TOKEN_MAX_TTL_S,
  ID_TOKEN_MIN_TTL_S,
  ID_TOKEN_ALG,
  ID_TOKEN_ALGS,
  ID_TOKEN_CLAIM_NAMES,
  AUDIENCE_PATTERN,
  idTokenWindow,
  idTokenSubject,
  idTokenClaims,
  openIdConfiguration,
  type IdTokenSubject,
  type IdTokenClaims,
} from "./id-token-claims.ts";
