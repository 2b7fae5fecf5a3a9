// The host agent's entry into the engine (package export "@kiln/engine/shredding-cipher"): the
// chunk cipher alone, with no database and no env, so the agent seals artifacts before upload and
// opens them on restore without loading the control plane (docs/adr/0037 "Artifacts").
export { headerFor, OpenStream, PartSealStream } from "./shredding/chunk-cipher.ts";
