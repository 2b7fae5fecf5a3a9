// Public API of the attestation capability (conventions 4): the transparency log (./tlog).
export * from "./tlog/index.ts";
