// The job's checkout at the pinned commit, with a minimal git environment (docs/adr/0017).
export { checkoutSource, SourceAuthError, type SourceCredential } from "./git-checkout.ts";
export { fetchSourceCredential, type SourceCredentialResult } from "./source-credential.ts";
