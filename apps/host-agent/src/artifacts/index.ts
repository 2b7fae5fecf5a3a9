// Artifacts on the host (docs/adr/0007-artifacts.md): freeze, upload in parts, restore by digest.
// Caches reuse the control calls and the ranged transfers.
export { ArtifactTransfer } from "./artifact-transfer.ts";
export { callControl, type CallFailure } from "./control-calls.ts";
export { downloadToFile, putFileRange } from "./http-transfer.ts";
export { freezeArtifact } from "./freeze.ts";
export { resolveRestoreTarget, restoreArtifact } from "./restore-artifact.ts";
export { uploadArtifact } from "./upload-artifact.ts";
