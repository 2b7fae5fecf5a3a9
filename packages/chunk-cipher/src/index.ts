// The chunk cipher of crypto-shredding (docs/adr/0037), alone: no database, no env, no control plane.
// The engine seals and opens archived logs and artifacts with it; the host agent seals artifacts
// before upload and opens them on restore, and may import nothing else of the engine's.
export {
  headerFor,
  OpenStream,
  openBuffer,
  openRange,
  PartSealStream,
  SealStream,
  sealBuffer,
  type DataKey,
} from "./chunk-cipher.ts";
