import { isMap } from "yaml";
import { CACHE_KINDS, type CacheKind } from "../caches/index.ts";
import { quote } from "./errors.ts";
import { WORKFLOW_LIMITS } from "./limits.ts";
import { CONTROL_CHARACTERS, sandboxPathProblem, workspacePathProblem } from "../shared/paths.ts";
import { secretNameProblem } from "../secrets/index.ts";
import { reservedEnvNameProblem } from "../shared/env-names.ts";
import { label, type Located, type Reader } from "./reader.ts";
import { rejectExpressions, withPlaceholders } from "./expressions.ts";
import type { WorkflowJob } from "./types.ts";

const NAME_PATTERN = /^[A-Za-z0-9_.-]+$/;
const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Lists of paths are not covered by WORKFLOW_LIMITS; this keeps them in the
// same order of magnitude as steps so no single list dominates the byte budget.
const MAX_PATHS_PER_LIST = 256;

export interface RestoreSite {
  fromJob: string;
  name: string;
  fromAt: Located;
}

/** Job and artifact names end up in storage keys and URLs, hence the tight alphabet. */
function readName(reader: Reader, at: Located, given?: string): string {
  const name = given ?? reader.text(at, "a name");
  const max = WORKFLOW_LIMITS.maxNameLength;
  if (name.length === 0 || name.length > max || !NAME_PATTERN.test(name) || /^\.+$/.test(name)) {
    reader.fail(
      at,
      `${label(at)} must be 1-${max} characters from A-Z a-z 0-9 _ . - and not only dots (got ${quote(name)})`,
    );
  }
  return name;
}

/**
 * A job's `name:` may hold expressions (issue 20); its literal parts obey readName's alphabet. The
 * name as written stays the job's identity for `needs` and `from_job`.
 */
export function readJobName(reader: Reader, at: Located): string {
  const name = reader.text(at, "a name");
  readName(reader, at, withPlaceholders(name));
  return name;
}

/** Expressions in env values are checked by the caller, which knows what they may reference. */
export function readEnv(reader: Reader, at: Located): Record<string, string> {
  const entries = reader.mapping(at, null, "a mapping of variable names to values");
  const max = WORKFLOW_LIMITS.maxEnvVars;
  if (entries.size > max) reader.fail(at, `${label(at)} has ${entries.size} variables; at most ${max} are allowed`);
  const env: [string, string][] = [];
  for (const [name, valueAt] of entries) {
    if (!ENV_NAME_PATTERN.test(name)) {
      reader.fail(valueAt, `${label(at)} variable name ${quote(name)} must match [A-Za-z_][A-Za-z0-9_]*`);
    }
    const reserved = reservedEnvNameProblem(name);
    if (reserved)
      reader.fail(valueAt, `${label(at)} variable name ${quote(name)} ${reserved}`, "WORKFLOW.ENV_NAME_RESERVED");
    const value = reader.text(valueAt, "a string, number or boolean");
    if (value.includes("\0")) reader.fail(valueAt, `${label(valueAt)} must not contain NUL characters`);
    env.push([name, value]);
  }
  // fromEntries defines own properties, so a variable called __proto__ stays data.
  return Object.fromEntries(env);
}

export function readCommand(reader: Reader, at: Located, expected: string): string {
  const command = reader.text(at, expected);
  if (command.trim() === "") reader.fail(at, `${label(at)} must not be an empty command`);
  const max = WORKFLOW_LIMITS.maxStepLength;
  if (command.length > max) reader.fail(at, `${label(at)} is longer than ${max} characters`);
  if (command.includes("\0")) reader.fail(at, `${label(at)} must not contain NUL characters`);
  rejectExpressions(reader, at, command);
  return command;
}

export function readDisplayName(reader: Reader, at: Located): string {
  const name = reader.text(at);
  const max = WORKFLOW_LIMITS.maxNameLength;
  if (name.trim() === "" || name.length > max || CONTROL_CHARACTERS.test(name)) {
    reader.fail(at, `${label(at)} must be 1-${max} characters without control characters`);
  }
  rejectExpressions(reader, at, name);
  return name;
}

/** Returns where the ref was written too: an expression in it is checked again once substituted. */
export function readImageRef(reader: Reader, at: Located): { ref: string; refAt: Located } {
  const expected = 'an image reference or {ref: "..."}';
  const refAt = isMap(at.node) ? reader.required(reader.mapping(at, ["ref"], expected), "ref", at) : at;
  const ref = reader.text(refAt, expected);
  // Expressions (issue 20) are checked as placeholders here and substituted at expansion.
  const literal = withPlaceholders(ref);
  if (literal === "" || ref.length > 1024 || /\s/.test(literal) || CONTROL_CHARACTERS.test(ref)) {
    reader.fail(refAt, `${label(refAt)} must be a non-empty image reference without whitespace`);
  }
  return { ref, refAt };
}

/** The same rule once expressions are substituted: a matrix value must not smuggle in whitespace. */
export function checkImageRef(reader: Reader, at: Located, ref: string): void {
  if (ref === "" || ref.length > 1024 || /\s/.test(ref) || CONTROL_CHARACTERS.test(ref)) {
    reader.fail(
      at,
      `${label(at)} must be a non-empty image reference without whitespace (got ${quote(ref)} after substitution)`,
    );
  }
}

export function readCache(reader: Reader, at: Located): NonNullable<WorkflowJob["cache"]> {
  const fields = reader.mapping(at, ["kind", "version", "inputs", "paths"]);
  const kindAt = reader.required(fields, "kind", at);
  const kind = reader.text(kindAt);
  if (!isCacheKind(kind)) {
    return reader.fail(kindAt, `${label(kindAt)} must be one of: ${CACHE_KINDS.join(", ")} (got ${quote(kind)})`);
  }
  const versionAt = reader.required(fields, "version", at);
  const version = reader.text(versionAt);
  checkCacheVersion(reader, versionAt, version);
  const inputs = readPaths(reader, reader.required(fields, "inputs", at), 0, workspacePathProblem);
  const paths = readPaths(reader, reader.required(fields, "paths", at), 1, sandboxPathProblem);
  return { kind, version, inputs, paths };
}

export function checkCacheVersion(reader: Reader, at: Located, version: string): void {
  const max = WORKFLOW_LIMITS.maxNameLength;
  if (version.trim() === "" || version.length > max || CONTROL_CHARACTERS.test(version)) {
    reader.fail(at, `${label(at)} must be 1-${max} characters without control characters`);
  }
}

function isCacheKind(kind: string): kind is CacheKind {
  return (CACHE_KINDS as readonly string[]).includes(kind);
}

function readPaths(reader: Reader, at: Located, min: number, problemOf: (path: string) => string | null): string[] {
  const expected = min > 0 ? "a non-empty list of paths" : "a list of paths";
  return reader.list(at, expected, { min, max: MAX_PATHS_PER_LIST }).map((item) => readPath(reader, item, problemOf));
}

function readPath(reader: Reader, at: Located, problemOf: (path: string) => string | null): string {
  const path = reader.text(at, "a path");
  rejectExpressions(reader, at, path);
  const problem = problemOf(path);
  if (problem) reader.fail(at, `${label(at)} ${problem} (got ${quote(path)})`);
  return path;
}

export function readArtifacts(
  reader: Reader,
  at: Located,
): { artifacts: WorkflowJob["artifacts"]; restoreSites: RestoreSite[] } {
  const fields = reader.mapping(at, ["publish", "restore"]);
  const artifacts: WorkflowJob["artifacts"] = { publish: [], restore: [] };
  const restoreSites: RestoreSite[] = [];
  const listLimits = { min: 0, max: MAX_PATHS_PER_LIST };

  const publishAt = fields.get("publish");
  const published = new Set<string>();
  for (const item of publishAt ? reader.list(publishAt, "a list of {name, path}", listLimits) : []) {
    const entry = reader.mapping(item, ["name", "path"]);
    const nameAt = reader.required(entry, "name", item);
    const name = readName(reader, nameAt);
    if (published.has(name)) reader.fail(nameAt, `${label(nameAt)} publishes artifact ${quote(name)} twice`);
    published.add(name);
    const path = readPath(reader, reader.required(entry, "path", item), workspacePathProblem);
    artifacts.publish.push({ name, path });
  }

  const restoreAt = fields.get("restore");
  const targets = new Set<string>();
  for (const item of restoreAt ? reader.list(restoreAt, "a list of {from_job, name, path}", listLimits) : []) {
    const entry = reader.mapping(item, ["from_job", "name", "path"]);
    const fromAt = reader.required(entry, "from_job", item);
    const fromJob = readName(reader, fromAt);
    const name = readName(reader, reader.required(entry, "name", item));
    const pathAt = reader.required(entry, "path", item);
    const path = readPath(reader, pathAt, workspacePathProblem);
    if (targets.has(path)) reader.fail(pathAt, `${label(pathAt)} restores two artifacts to ${quote(path)}`);
    targets.add(path);
    artifacts.restore.push({ fromJob, name, path });
    restoreSites.push({ fromJob, name, fromAt });
  }
  return { artifacts, restoreSites };
}

/** `secrets: [NAME, ...]`: the only secrets this job's steps may receive (issue 16). */
export function readSecretNames(reader: Reader, at: Located): string[] {
  const items = reader.list(at, "a list of secret names", { min: 0, max: WORKFLOW_LIMITS.maxSecretsPerJob });
  const seen = new Set<string>();
  return items.map((item) => {
    const name = reader.text(item, "a secret name");
    const problem = secretNameProblem(name);
    const code = reservedEnvNameProblem(name) ? "WORKFLOW.ENV_NAME_RESERVED" : undefined;
    if (problem) reader.fail(item, `${label(item)} ${quote(name)} ${problem}`, code);
    if (seen.has(name)) reader.fail(item, `${label(at)} lists ${quote(name)} twice`);
    seen.add(name);
    return name;
  });
}

/** `secrets_required: true|false`; a plain YAML boolean, nothing else. */
export function readSecretsRequired(reader: Reader, at: Located): boolean {
  const value = reader.text(at, "true or false");
  if (value !== "true" && value !== "false")
    reader.fail(at, `${label(at)} must be true or false (got ${quote(value)})`);
  return value === "true";
}
