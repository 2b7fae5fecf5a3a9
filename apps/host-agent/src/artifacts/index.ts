export { ArtifactTransfer } from "./artifact-transfer.ts";
