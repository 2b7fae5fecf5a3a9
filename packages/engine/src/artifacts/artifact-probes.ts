// The deletion sampler's read path for artifacts (docs/adr/0037 "Artifacts"): the API download,
// built as the serving process builds it, from the database and the key store as they are now. A
// refusal (SHRED.KEY_DESTROYED, ARTIFACT.NOT_FOUND, ARTIFACT.EXPIRED) is thrown and the sampler
// records it as unreadable; bytes coming back are a leak. The raw GET is the shared object_get
// probe (logProbes), which opens any sealed object whose header still names a live key.
import type { Db } from "@kiln/db";
import type { ShredProbe } from "../shredding/index.ts";
import type { ArtifactStore } from "./artifact-context.ts";
import { downloadArtifact } from "./download-artifact.ts";

export function artifactProbes(d: { db: Db; store: ArtifactStore }): ShredProbe[] {
  return [
    {
      path: "api_download",
      kinds: ["artifact"],
      async probe(o) {
        const got = await downloadArtifact(d.db, d.store, { artifactId: o.subjectId, reader: { orgId: o.orgId } });
        if (got.kind === "redirect") {
          // A plaintext generation behind a key the sampler was told is destroyed: the URL serves it.
          const r = await fetch(got.url);
          const n = (await r.arrayBuffer()).byteLength;
          return r.ok
            ? { readable: true, detail: `api_download: ${o.objectKey} served in clear (${n} bytes)` }
            : { readable: false, detail: `api_download: the URL answered ${r.status}` };
        }
        let n = 0;
        for await (const c of got.body) n += (c as Buffer).length;
        return { readable: true, detail: `api_download: ${o.objectKey} opened and streamed (${n} bytes)` };
      },
    },
  ];
}
