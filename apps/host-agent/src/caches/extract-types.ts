// Types shared by the extractor and its tar sink.
export class CacheRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CacheRejected";
  }
}

export interface ExtractExpectation {
  /** The declared cache paths of the job, in order; the manifest must list exactly these. */
  paths: readonly string[];
  sizeBytes: number;
  sha256: string;
  maxBytes: number;
  maxEntries: number;
}

export interface ExtractStats {
  compressedBytes: number;
  unpackedBytes: number;
  entries: number;
}
