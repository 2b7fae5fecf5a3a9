import { quote } from "./errors.ts";
import { CONTROL_CHARACTERS } from "../shared/paths.ts";
import { label, type Located, type Reader } from "./reader.ts";

export const MATRIX_LIMITS = {
  /** Expansions of one job (issue 20); past it the file is refused with WORKFLOW.MATRIX_TOO_LARGE. */
  maxExpansions: 256,
  /** Jobs in the whole expanded definition: 256 jobs of 256 expansions would be 65,536 rows. */
  maxExpandedJobs: 1024,
  /** The cartesian product is never materialised past this, whatever exclude would remove. */
  maxProduct: 65_536,
  maxKeys: 32,
  maxValueLength: 1024,
} as const;

const KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]*$/;

export type MatrixCombination = Map<string, string>;

export interface Strategy {
  /** Axes in the order written: the product's key order and the expansion name's. */
  axes: { key: string; values: string[] }[];
  include: MatrixCombination[];
  exclude: MatrixCombination[];
  maxParallel: number | null;
  failFast: boolean;
  /** Every key a combination can have: the axes and the keys include adds. */
  keys: Set<string>;
  at: Located;
}

/**
 * The env variable a matrix key reaches the steps as: KILN_MATRIX_ and the key upper-cased with
 * `-` as `_` (keys are [A-Za-z_][A-Za-z0-9_-]*, so the result is always a valid variable name).
 */
export function matrixEnvName(key: string): string {
  return `KILN_MATRIX_${key.toUpperCase().replaceAll("-", "_")}`;
}

export function readStrategy(reader: Reader, at: Located): Strategy {
  const fields = reader.mapping(at, ["matrix", "include", "exclude", "max_parallel", "fail_fast"]);
  const matrixAt = fields.get("matrix");
  const axes: Strategy["axes"] = [];
  if (matrixAt) {
    for (const [key, valuesAt] of reader.mapping(matrixAt, null, "a mapping of keys to lists of values")) {
      if (key === "include" || key === "exclude") {
        reader.fail(valuesAt, `${label(valuesAt)}: ${key} belongs under strategy, beside matrix`);
      }
      checkKey(reader, valuesAt, key);
      const items = reader.list(valuesAt, "a non-empty list of values", { min: 1, max: MATRIX_LIMITS.maxExpansions });
      const values = items.map((item) => readValue(reader, item));
      const dup = values.find((v, i) => values.indexOf(v) !== i);
      if (dup !== undefined) reader.fail(valuesAt, `${label(valuesAt)} lists ${quote(dup)} twice`);
      axes.push({ key, values });
    }
  }
  const include = readCombinations(reader, fields.get("include"));
  const exclude = readCombinations(reader, fields.get("exclude"));
  if (axes.length === 0 && include.length === 0) {
    reader.fail(at, `${label(at)} needs a matrix with at least one key, or an include list`);
  }
  const axisKeys = new Set(axes.map((a) => a.key));
  for (const [i, combo] of exclude.entries()) {
    for (const key of combo.keys()) {
      if (!axisKeys.has(key)) {
        reader.fail(at, `${label(at)}.exclude[${i}] names ${quote(key)}, which is not a matrix key`);
      }
    }
  }
  const keys = new Set([...axisKeys, ...include.flatMap((c) => [...c.keys()])]);
  if (keys.size > MATRIX_LIMITS.maxKeys) {
    reader.fail(at, `${label(at)} has ${keys.size} matrix keys; at most ${MATRIX_LIMITS.maxKeys} are allowed`);
  }
  const envNames = new Map<string, string>();
  for (const key of keys) {
    const other = envNames.get(matrixEnvName(key));
    if (other !== undefined) {
      reader.fail(at, `${label(at)}: matrix keys ${quote(other)} and ${quote(key)} both become ${matrixEnvName(key)}`);
    }
    envNames.set(matrixEnvName(key), key);
  }
  const maxParallelAt = fields.get("max_parallel");
  const failFastAt = fields.get("fail_fast");
  return {
    axes,
    include,
    exclude,
    maxParallel: maxParallelAt
      ? reader.integer(
          maxParallelAt,
          1,
          MATRIX_LIMITS.maxExpansions,
          `a whole number from 1 to ${MATRIX_LIMITS.maxExpansions}`,
        )
      : null,
    // As on GitHub Actions: one user failure stops the siblings unless the file says otherwise.
    failFast: failFastAt ? readBoolean(reader, failFastAt) : true,
    keys,
    at,
  };
}

function readCombinations(reader: Reader, at: Located | undefined): MatrixCombination[] {
  if (!at) return [];
  const items = reader.list(at, "a list of mappings", { min: 0, max: MATRIX_LIMITS.maxExpansions });
  return items.map((item) => {
    const combo: MatrixCombination = new Map();
    const entries = reader.mapping(item, null, "a mapping of matrix keys to values");
    if (entries.size === 0) reader.fail(item, `${label(item)} must name at least one matrix key`);
    for (const [key, valueAt] of entries) {
      checkKey(reader, valueAt, key);
      combo.set(key, readValue(reader, valueAt));
    }
    return combo;
  });
}

function checkKey(reader: Reader, at: Located, key: string): void {
  if (!KEY_PATTERN.test(key) || key.length > 64) {
    reader.fail(at, `${label(at)}: matrix key ${quote(key)} must be 1-64 characters matching [A-Za-z_][A-Za-z0-9_-]*`);
  }
}

/**
 * Any scalar, kept as written. Values are data (they reach steps only as env values), so `$(curl
 * evil)` is a legal value; control characters are refused because values also appear in job names.
 */
function readValue(reader: Reader, at: Located): string {
  const value = reader.text(at, "a string, number or boolean");
  if (value.length > MATRIX_LIMITS.maxValueLength || CONTROL_CHARACTERS.test(value) || value.includes("\0")) {
    reader.fail(
      at,
      `${label(at)} must be at most ${MATRIX_LIMITS.maxValueLength} characters without control characters`,
    );
  }
  return value;
}

function readBoolean(reader: Reader, at: Located): boolean {
  const text = reader.text(at, "true or false");
  if (text !== "true" && text !== "false") reader.fail(at, `${label(at)} must be true or false`);
  return text === "true";
}
