import type { WorkflowError, WorkflowErrorCode } from "./types.ts";

export interface Position {
  line: number;
  column: number;
}

/**
 * Validation bails out on the first problem; throwing keeps every reader free of
 * result plumbing, and parseWorkflow is the single place that turns it back into
 * a value so the public API never throws.
 */
export class WorkflowInvalid extends Error {
  readonly detail: WorkflowError;

  constructor(detail: WorkflowError) {
    super(detail.message);
    this.name = "WorkflowInvalid";
    this.detail = detail;
  }
}

export function workflowError(
  position: Position | null,
  path: string | null,
  text: string,
  code: WorkflowErrorCode = "WORKFLOW.INVALID",
): WorkflowError {
  const prefix = position ? `line ${position.line}, column ${position.column}: ` : "";
  return {
    code,
    message: prefix + text,
    line: position?.line ?? null,
    column: position?.column ?? null,
    path: path === "" ? null : path,
  };
}

/** Echoes user input into messages without letting a huge value bloat them. */
export function quote(value: string): string {
  const shown = value.length > 60 ? `${value.slice(0, 57)}...` : value;
  return JSON.stringify(shown);
}
