export { ArtifactTransfer, type ArtifactTransferDeps } from "./artifact-transfer.ts";
