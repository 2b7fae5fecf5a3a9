// Secrets (issue 16, docs/adr/0025-secrets-envelope-and-broker.md): envelope storage under a KEK,
// admin writes with audit records, the broker that delivers values to trusted jobs only.
export { gcmEncrypt, gcmDecrypt, gcmSeal, gcmOpen } from "./aead.ts";
export { dekAad, secretAad } from "./envelope.ts";
export {
  KekSource,
  kekSourceFromEnv,
  readKekFile,
  parseKek,
  kekIdOf,
  generateKekText,
  type Kek,
} from "./kek.ts";
export {
  setSecret,
  deleteSecret,
  listSecrets,
  secretEnvelope,
  type SecretView,
  type SecretEnvelope,
} from "./secret-store.ts";
export { targetById, targetBySlug, type SecretTarget } from "./secret-target.ts";
export { rotateKek, type RotateKekResult } from "./rotate-kek.ts";
export { adminSecretTarget, callerOrg, type OrgCaller } from "./authorize-secrets.ts";
export { deliverSecrets, type DeliveredSecrets } from "./deliver-secrets.ts";
// The org DEK also wraps the crypto-shredding data keys (docs/adr/0037).
export { orgDataKey } from "./data-key.ts";
