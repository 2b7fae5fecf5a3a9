// The job's checkout at the pinned commit, with a minimal git environment (docs/adr/0017).
export { checkoutSource, SourceAuthError } from "./git-checkout.ts";
export { fetchSourceCredential } from "./source-credential.ts";
