// Offline checks of the Kubernetes manifests (docs/adr/0046): render a Kustomize directory with
// `kubectl kustomize` (no cluster involved), then validate every object against the Kubernetes
// API's own schemas with kubernetes-models, whose validators are generated from the upstream
// OpenAPI specification. An object of a kind without a schema there is an error, not a pass.
import { execFile } from "node:child_process";
import { parseAllDocuments } from "yaml";

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
}

/** `kubectl kustomize <dir>` parsed into objects; kubectl's stderr is the error when it refuses. */
export function renderKustomize(dir: string): Promise<KubeObject[]> {
  return new Promise((resolve, reject) =>
    execFile("kubectl", ["kustomize", dir], { maxBuffer: 1 << 24 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`kubectl kustomize ${dir} failed: ${stderr.trim() || err.message}`));
      try {
        resolve(parseManifests(stdout));
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    }),
  );
}

function parseManifests(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`rendered YAML does not parse: ${doc.errors[0]?.message}`);
      return doc.toJS() as unknown;
    })
    .filter((o): o is KubeObject => o !== null && typeof o === "object");
}

type Model = new (data: unknown) => { validate(): void };
// "v1" is the core group; otherwise "<group>/<version>". Nothing else becomes an import specifier.
const API_VERSION = /^(?:[a-z0-9.-]+\/)?v[0-9]+(?:(?:alpha|beta)[0-9]+)?$/;

async function modelFor(apiVersion: string, kind: string): Promise<Model | null> {
  if (!API_VERSION.test(apiVersion)) return null;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(/* @vite-ignore */ `kubernetes-models/${apiVersion}`)) as Record<string, unknown>;
  } catch {
    return null;
  }
  const model = mod[kind];
  return typeof model === "function" ? (model as Model) : null;
}

const describe = (o: Partial<KubeObject>) =>
  `${String(o.kind)}/${o.metadata?.namespace ? `${o.metadata.namespace}/` : ""}${String(o.metadata?.name)}`;

/** One line per invalid object (empty when all are valid): the object and the schema's complaint. */
export async function validateObjects(objects: readonly KubeObject[]): Promise<string[]> {
  const problems: string[] = [];
  for (const o of objects) {
    if (typeof o.apiVersion !== "string" || typeof o.kind !== "string" || typeof o.metadata?.name !== "string") {
      problems.push(`${describe(o)}: apiVersion, kind and metadata.name are required`);
      continue;
    }
    const Model = await modelFor(o.apiVersion, o.kind);
    if (!Model) {
      problems.push(`${describe(o)}: no Kubernetes schema for ${o.apiVersion} ${o.kind}`);
      continue;
    }
    try {
      new Model(o).validate();
    } catch (e) {
      problems.push(`${describe(o)}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return problems;
}
