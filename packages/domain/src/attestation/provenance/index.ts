// Provenance (issue 17, docs/adr/0027-control-plane-attestor.md): statements, DSSE and the rules.
export { canonicalJson } from "./canonical-json.ts";
export { bytesEqual, fromBase64Any, fromUtf8, toBase64, toHex, utf8 } from "./bytes.ts";
export {
  IN_TOTO_PAYLOAD_TYPE,
  pae,
  parseEnvelope,
  type DsseEnvelope,
  type DsseSignature,
  type EnvelopeParse,
} from "./dsse.ts";
export {
  SLSA_PROVENANCE_V1,
  STATEMENT_TYPE_V1,
  validateSlsaProvenance,
  validateStatement,
  type ResourceDescriptor,
  type RuleResult,
  type StatementV1,
} from "./in-toto.ts";
export {
  builderId,
  buildTypeFor,
  composeProvenance,
  invocationId,
  KILN_BUILD_TYPE,
  KILN_UNTRUSTED_BUILD_TYPE,
  type BuildHost,
  type ProvenanceInput,
} from "./compose-provenance.ts";
export {
  checkProvenanceSource,
  normalizeSource,
  readProvenanceTrust,
  type BuilderKind,
  type ProvenanceTrust,
  type SourceCheck,
} from "./provenance-trust.ts";
export {
  attestationStateOf,
  ATTESTATION_ROW_STATES,
  ATTESTATION_ALGORITHMS,
  type AttestationState,
} from "./attestation-state.ts";
