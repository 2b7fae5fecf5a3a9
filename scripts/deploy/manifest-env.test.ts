// Every environment variable the Kubernetes manifests give a container is one its app's zod env
// knows, and the values they set parse (docs/adr/0046): a misspelt name (zod drops unknown keys
// silently) or a value the app refuses at boot fails here, not in a cluster. Secret values are
// stand-ins of the right shape; the list below is also the set of keys docs/operating.md tells an
// operator to put in the kiln-env Secret.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseEnv as parseAgentEnv } from "@kiln/host-agent/env";
import { AUTH_ENV_NAMES, parseAuthEnv } from "@kiln/web/src/server/auth/env.ts";
import { parseWebEnv } from "@kiln/web/src/server/env.ts";
import { parseWorkersEnv } from "@kiln/workers/env";
import { describe, expect, it } from "vitest";
import { type KubeObject, renderKustomize } from "./kubernetes-manifests.ts";

const EXAMPLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../deploy/kubernetes/overlays/example");

const SECRET_STAND_INS: Record<string, string> = {
  WEB_DATABASE_URL: "postgresql://kiln_web:pw@db.example.com:5432/kiln",
  WORKERS_DATABASE_URL: "postgresql://kiln_workers:pw@db.example.com:5432/kiln",
  OWNER_DATABASE_URL: "postgresql://kiln:pw@db.example.com:5432/kiln",
  REDIS_URL: "redis://redis.example.com:6379",
  S3_ACCESS_KEY_ID: "AKIAEXAMPLE",
  S3_SECRET_ACCESS_KEY: "secret-example",
  KILN_METRICS_TOKEN: "a-metrics-token-of-32-characters",
  KILN_SECRETS_KEY: Buffer.alloc(32, 7).toString("base64"),
  KILN_TLOG_KEY_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString("base64"),
  AGENT_TOKEN: "kagent_example",
  AUTH_SECRET: "an-auth-secret-of-at-least-32-characters",
};

/** What the images' config sets before the manifests' variables (scripts/lib/images/deployable-images.ts). */
const IMAGE_ENV = { NODE_ENV: "production" };

interface Container {
  name: string;
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { key: string }; fieldRef?: unknown } }[];
  envFrom?: { configMapRef?: { name: string } }[];
}

/** The environment a container starts with, as name -> value; refs are resolved or stood in for. */
function containerEnv(c: Container, configMaps: Map<string, Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const data = from.configMapRef && configMaps.get(from.configMapRef.name);
    if (!data) throw new Error(`${c.name}: envFrom names a ConfigMap the manifests do not have`);
    Object.assign(out, data);
  }
  for (const e of c.env ?? []) {
    const key = e.valueFrom?.secretKeyRef?.key;
    if (key !== undefined && !(key in SECRET_STAND_INS))
      throw new Error(`${c.name}: Secret key ${key} is not documented`);
    out[e.name] = e.value ?? (key !== undefined ? SECRET_STAND_INS[key]! : "node-a");
  }
  return out;
}

/** Names the manifests set that the parsed result does not carry: zod's object drops unknown keys. */
function unknownNames(
  set: Record<string, string>,
  parse: (e: Record<string, string>) => object,
  inherited: Record<string, string> = {},
): string[] {
  const parsed = parse({ ...inherited, ...set });
  return Object.keys(set).filter((k) => !Object.hasOwn(parsed, k));
}

const PARSERS: Record<string, (e: Record<string, string>) => object> = {
  // Two schemas read the web app's variables: the server's and sign-in's (which must also parse:
  // AUTH_SECRET is required in production). Sign-in's output is reshaped, so its names are listed.
  web: (e) => {
    parseAuthEnv(e);
    return { ...parseWebEnv(e), ...Object.fromEntries(AUTH_ENV_NAMES.map((n) => [n, true])) };
  },
  workers: parseWorkersEnv,
  // The migrations Job runs scripts/migrate.ts from the workers image; DATABASE_URL is all it reads.
  migrate: parseWorkersEnv,
  "host-agent": (e) => parseAgentEnv(e, 1),
};

function containers(objects: KubeObject[]): Container[] {
  return objects.flatMap((o) => {
    const spec = (o.spec as { template?: { spec?: { containers?: Container[] } } } | undefined)?.template?.spec;
    return spec?.containers ?? [];
  });
}

describe("the manifests' environment", () => {
  it("every container's variables are ones its app accepts, with values it parses", async () => {
    const objects = await renderKustomize(EXAMPLE);
    const configMaps = new Map(
      objects.filter((o) => o.kind === "ConfigMap").map((o) => [o.metadata.name, o.data as Record<string, string>]),
    );
    const seen = containers(objects).map((c) => c.name);
    expect(seen.sort()).toEqual(["host-agent", "migrate", "web", "workers"]);
    for (const c of containers(objects)) {
      const parse = PARSERS[c.name];
      expect(parse, c.name).toBeDefined();
      const unknown = unknownNames(containerEnv(c, configMaps), parse!, IMAGE_ENV);
      expect({ container: c.name, unknown }).toEqual({
        container: c.name,
        unknown: [],
      });
    }
  });

  it("the key files come from mounted Secrets, not the data dir", async () => {
    const objects = await renderKustomize(EXAMPLE);
    const configMaps = new Map(
      objects.filter((o) => o.kind === "ConfigMap").map((o) => [o.metadata.name, o.data as Record<string, string>]),
    );
    const [web, workers] = ["web", "workers"].map((n) => {
      const c = containers(objects).find((x) => x.name === n);
      if (!c) throw new Error(`no ${n} container`);
      return containerEnv(c, configMaps);
    });
    expect(web).toMatchObject({
      KILN_IDENTITY_KEK_FILE: "/var/run/kiln/keys/identity-kek",
      KILN_SECRETS_KEK_FILE: "/var/run/kiln/keys/secrets-kek",
    });
    expect(web).not.toHaveProperty("KILN_ATTESTATION_KEY_FILE");
    expect(workers).toMatchObject({ KILN_ATTESTATION_KEY_FILE: "/var/run/kiln/keys/attestation-key.pem" });
    expect(parseWorkersEnv(workers!).KILN_TLOG_KEY_ENCRYPTION_KEY).toBe(SECRET_STAND_INS.KILN_TLOG_KEY_ENCRYPTION_KEY);
  });

  it("a misspelt variable is caught, and so is a value the app refuses", () => {
    const bad: Container = { name: "workers", env: [{ name: "KILN_METRIC_PORT", value: "9464" }] };
    const env = containerEnv(bad, new Map());
    expect(unknownNames({ ...env, DATABASE_URL: "postgresql://x@y/z" }, parseWorkersEnv)).toEqual(["KILN_METRIC_PORT"]);
    expect(() => parseWorkersEnv({ DATABASE_URL: "postgresql://x@y/z", KILN_METRICS_PORT: "http" })).toThrow(
      /KILN_METRICS_PORT/,
    );
  });
});
