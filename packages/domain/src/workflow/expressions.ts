import { quote } from "./errors.ts";
import { label, type Located, type Reader } from "./reader.ts";

// Kiln's expressions are references, not a language: `${{ matrix.<key> }}` and `${{ inputs.<name> }}`,
// substituted at freeze. They are allowed only where the value is data the platform reads (the job's
// name, image, cache version and env values), never in a step's shell text: a matrix value or input
// spliced into `run:` is GitHub Actions' script-injection class. Steps read these values from env
// (KILN_MATRIX_<KEY>, or an env entry that references them), where the shell never parses them as code.

const OPENING = "${{";
const EXPRESSION = /\$\{\{([^}]*)\}\}/g;
const REFERENCE = /^\s*(matrix|inputs)\.([A-Za-z_][A-Za-z0-9_-]*)\s*$/;

/** What an allowed field may reference: the job's matrix keys (null: the job has no matrix). */
export interface ExpressionScope {
  matrixKeys: ReadonlySet<string> | null;
}

export interface ExpressionValues {
  matrix: Readonly<Record<string, string>>;
  inputs: Readonly<Record<string, string>>;
}

export function hasExpression(text: string): boolean {
  return text.includes(OPENING);
}

/** A field where no expression may appear: a named error that says where values belong instead. */
export function rejectExpressions(reader: Reader, at: Located, text: string): void {
  if (!hasExpression(text)) return;
  reader.fail(
    at,
    `${label(at)}: expressions (\${{ ... }}) are not allowed here, only in a job's name, image, cache version and env values; ` +
      "a step reads matrix values as $KILN_MATRIX_<KEY> and inputs through an env entry, so they are never parsed as shell code",
    "WORKFLOW.EXPRESSION_NOT_ALLOWED",
  );
}

/** Checks every expression of an allowed field names something that will exist at expansion. */
export function checkExpressions(reader: Reader, at: Located, text: string, scope: ExpressionScope): void {
  if (!hasExpression(text)) return;
  const stripped = text.replace(EXPRESSION, "");
  if (hasExpression(stripped)) reader.fail(at, `${label(at)} has an unterminated \${{ expression`);
  for (const match of text.matchAll(EXPRESSION)) {
    const body = match[1] ?? "";
    const ref = REFERENCE.exec(body);
    if (!ref) {
      reader.fail(
        at,
        `${label(at)}: ${quote(match[0])} is not an expression Kiln evaluates; use \${{ matrix.<key> }} or \${{ inputs.<name> }}`,
        "WORKFLOW.EXPRESSION_NOT_ALLOWED",
      );
    }
    const [, kind, key = ""] = ref;
    if (kind === "matrix" && !scope.matrixKeys?.has(key)) {
      const known = scope.matrixKeys ? [...scope.matrixKeys].join(", ") : "";
      reader.fail(
        at,
        scope.matrixKeys
          ? `${label(at)} references matrix key ${quote(key)}, which the job's matrix does not define (it has: ${known})`
          : `${label(at)} references matrix.${key} but the job has no strategy.matrix`,
      );
    }
  }
}

/**
 * Replaces each reference with its value. An input the run was not given reads as the empty string
 * (as on other CI systems): push-triggered runs have no inputs, and a file must not fail for that.
 */
export function substituteExpressions(text: string, values: ExpressionValues): string {
  if (!hasExpression(text)) return text;
  return text.replace(EXPRESSION, (_whole, body: string) => {
    const ref = REFERENCE.exec(body);
    if (!ref) return "";
    const [, kind, key = ""] = ref;
    const source = kind === "matrix" ? values.matrix : values.inputs;
    return Object.hasOwn(source, key) ? (source[key] ?? "") : "";
  });
}

/** The text with every expression replaced by `x`, for checks of the literal parts (names). */
export function withPlaceholders(text: string): string {
  return text.replace(EXPRESSION, "x");
}
