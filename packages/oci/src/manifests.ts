// The JSON documents of an image, checked with zod before anything trusts a field of them.
import { z } from "zod";
import { DIGEST_RE } from "./digest.ts";
import { ImageError } from "./errors.ts";
import { INDEX_TYPES, LAYER_TYPES, MANIFEST_TYPES } from "./media-types.ts";

const digest = z.string().regex(DIGEST_RE, "a sha256 digest");
const descriptor = z.object({ mediaType: z.string(), digest, size: z.number().int().min(0) });

const indexSchema = z.object({
  schemaVersion: z.literal(2),
  mediaType: z.string().optional(),
  manifests: z.array(
    descriptor.extend({
      platform: z.object({ os: z.string(), architecture: z.string(), variant: z.string().optional() }).optional(),
    }),
  ),
});
const manifestSchema = z.object({
  schemaVersion: z.literal(2),
  mediaType: z.string().optional(),
  config: descriptor,
  layers: z.array(descriptor).max(256),
});
const configSchema = z.object({
  architecture: z.string(),
  os: z.string(),
  rootfs: z.object({ type: z.literal("layers"), diff_ids: z.array(digest) }),
  config: z
    .object({
      Env: z.array(z.string()).optional(),
      Cmd: z.array(z.string()).nullable().optional(),
      WorkingDir: z.string().optional(),
    })
    .passthrough()
    .optional(),
});
export type ImageIndex = z.infer<typeof indexSchema>;
export type ImageManifest = z.infer<typeof manifestSchema>;
export type ImageConfig = z.infer<typeof configSchema>;

/** Kiln's hosts are linux/amd64; the control plane pins that entry of a multi-platform index. */
export const HOST_PLATFORM = { os: "linux", architecture: "amd64" } as const;

function parseJson<T>(schema: z.ZodType<T>, bytes: Uint8Array, what: string): T {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch {
    throw new ImageError("IMAGE.BAD_MANIFEST", `${what} is not JSON`);
  }
  const r = schema.safeParse(json);
  if (!r.success)
    throw new ImageError(
      "IMAGE.BAD_MANIFEST",
      `${what} is malformed: ${r.error.issues
        .map((i) => `${i.path.join(".")}: ${i.message}`)
        .join("; ")
        .slice(0, 300)}`,
    );
  return r.data;
}

/** Index or manifest? The Content-Type decides, with the document's own mediaType as fallback. */
export function manifestKind(mediaType: string, bytes: Uint8Array): "index" | "manifest" {
  if (INDEX_TYPES.includes(mediaType)) return "index";
  if (MANIFEST_TYPES.includes(mediaType)) return "manifest";
  const inner = (() => {
    try {
      return JSON.parse(Buffer.from(bytes).toString("utf8")) as { mediaType?: string; manifests?: unknown };
    } catch {
      return {};
    }
  })();
  if (inner.mediaType && INDEX_TYPES.includes(inner.mediaType)) return "index";
  if (inner.mediaType && MANIFEST_TYPES.includes(inner.mediaType)) return "manifest";
  if (Array.isArray(inner.manifests)) return "index";
  throw new ImageError(
    "IMAGE.BAD_MANIFEST",
    `unsupported manifest media type ${JSON.stringify(mediaType)} (schema1 and others are not accepted)`,
  );
}

export function parseIndex(bytes: Uint8Array, what: string): ImageIndex {
  return parseJson(indexSchema, bytes, what);
}

export function parseManifest(bytes: Uint8Array, what: string): ImageManifest {
  const m = parseJson(manifestSchema, bytes, what);
  for (const l of m.layers) {
    if (!LAYER_TYPES.includes(l.mediaType))
      throw new ImageError("IMAGE.BAD_MANIFEST", `${what}: unsupported layer media type ${l.mediaType}`);
  }
  return m;
}

export function parseConfig(bytes: Uint8Array, what: string): ImageConfig {
  return parseJson(configSchema, bytes, what);
}

/** The linux/amd64 manifest's descriptor, or NO_PLATFORM naming what the index offers. */
export function selectPlatform(index: ImageIndex, what: string): ImageIndex["manifests"][number] {
  const hit = index.manifests.find(
    (m) =>
      m.platform?.os === HOST_PLATFORM.os &&
      m.platform.architecture === HOST_PLATFORM.architecture &&
      MANIFEST_TYPES.includes(m.mediaType),
  );
  if (hit) return hit;
  const offered = index.manifests
    .map((m) => (m.platform ? `${m.platform.os}/${m.platform.architecture}` : "unknown"))
    .join(", ");
  throw new ImageError("IMAGE.NO_PLATFORM", `${what} has no linux/amd64 image (offers: ${offered || "nothing"})`);
}
