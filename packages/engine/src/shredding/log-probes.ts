// The sampler's read paths for archived logs (docs/adr/0037): the object store with the platform's
// own credentials, and the replay the raw-log endpoint and the SSE stream serve from. Each builds
// what a serving process builds from the database and the key dir as they are now.
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { isShreddedObject, parseShredHeader, type ShredReadPath } from "@kiln/domain";
import type { SqlPool } from "../shared/sql-pool.ts";
import { LogArchiveReader, readLogChunks, type LogObjectStore } from "../logs/index.ts";
import { openBuffer } from "@kiln/chunk-cipher";
import { keyMaterialStillOpens, type ShredKeyDeps } from "./data-keys.ts";
import { ShredLogCipher } from "./log-cipher.ts";
import type { ShredProbe } from "./sample-deletions.ts";

/** The sampler's direct GET with the platform's own credentials: null when the object is gone. */
export function s3ObjectGetter(client: S3Client, bucket: string): (key: string) => Promise<Uint8Array | null> {
  return async (key) => {
    try {
      const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return (await r.Body?.transformToByteArray()) ?? null;
    } catch (e) {
      if ((e as { name?: string }).name === "NoSuchKey") return null;
      throw e;
    }
  };
}

const SEGMENT = /seg-(\d{10})-(\d{10})\.gz$/;

export interface LogProbeDeps {
  keys: ShredKeyDeps;
  pool: SqlPool;
  store: LogObjectStore;
  /** The raw GET: null when the object is not there. */
  getObject: (key: string) => Promise<Uint8Array | null>;
  clock: () => Date;
  /** The serving processes' own readers (with their caches), when the sampler runs beside them. */
  liveReaders?: Partial<Record<ShredReadPath, LogArchiveReader>>;
}

export function logProbes(d: LogProbeDeps): ShredProbe[] {
  const replay = (path: ShredReadPath): ShredProbe => ({
    path,
    kinds: ["log"],
    async probe(o) {
      const m = SEGMENT.exec(o.objectKey);
      if (!m) return { readable: false, detail: "not a segment key" };
      const from = Number(m[1]);
      const reader =
        d.liveReaders?.[path] ??
        new LogArchiveReader(d.store, undefined, new ShredLogCipher(d.keys, undefined, d.clock));
      const chunks = await readLogChunks(d.pool, reader, o.subjectId, from, { untilSeq: Number(m[2]) + 1 });
      const bytes = chunks.reduce((n, c) => n + c.length, 0);
      return chunks.length > 0
        ? { readable: true, detail: `${path}: ${chunks.length} chunks (${bytes} bytes) read from ${o.objectKey}` }
        : { readable: false, detail: `${path}: nothing returned` };
    },
  });
  return [
    {
      path: "object_get",
      // Any sealed object: the header names its key, whatever the kind (artifacts too, ADR 0037).
      kinds: ["log", "artifact"],
      async probe(o) {
        const body = await d.getObject(o.objectKey);
        if (!body) return { readable: false, detail: "object_get: the object is gone" };
        if (!isShreddedObject(body))
          return { readable: true, detail: `object_get: ${o.objectKey} is stored in clear (${body.length} bytes)` };
        // Everything the database and the key dir still hold, clock or not: the header names the key.
        const key = await keyMaterialStillOpens(d.keys, parseShredHeader(body).keyId);
        if (!key) return { readable: false, detail: `object_get: sealed, and data key ${o.keyId} no longer opens` };
        const plain = openBuffer(key, body);
        key.key.fill(0);
        return {
          readable: true,
          detail: `object_get: ${o.objectKey} opened (${plain.length} bytes): its key row and day key both exist`,
        };
      },
    },
    replay("raw_log"),
    replay("log_stream"),
  ];
}
