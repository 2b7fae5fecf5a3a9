// Public API of the artifacts capability (issue 5, docs/adr/0007-artifacts.md).
export { DEFAULT_ARTIFACT_SETTINGS, type ArtifactSettings, type ArtifactStore } from "./artifact-context.ts";
export type { JobClaims } from "../attempts/index.ts";
export { openUpload, type OpenUploadRequest, type UploadSession } from "./open-upload.ts";
export { recordPart, type PartReport } from "./record-part.ts";
export { finalizeUpload, type SealedArtifact } from "./finalize-upload.ts";
export { grantDownload, type DownloadGrant } from "./grant-download.ts";
export { downloadArtifact, type ArtifactReader, type ArtifactDownload } from "./download-artifact.ts";
export { listJobArtifacts, jobArtifactDownload, type JobArtifactView } from "./job-artifacts.ts";
// Object-store operations the caches capability reuses for its own objects.
export { objectExists, readBack, s3ErrorName, deleteObject } from "./store-ops.ts";
// Retention (issue 21) records its evictions in the artifact's own event stream.
export { recordArtifactTransition } from "./artifact-journal.ts";
export { collectArtifactGarbage, type ArtifactGcReport } from "./collect-garbage.ts";
export { readBackPlaintext, sealWire, type ArtifactSealInfo } from "./artifact-seal.ts";
export { artifactProbes } from "./artifact-probes.ts";
export {
  DEFAULT_RESEAL_LOOKAHEAD_MS,
  resealHeldArtifacts,
  type ResealOptions,
  type ResealReport,
} from "./reseal-artifacts.ts";
