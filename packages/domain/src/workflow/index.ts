export { WORKFLOW_LIMITS } from "./limits.ts";
export { parseWorkflow } from "./parse-workflow.ts";
export { MATRIX_LIMITS, matrixEnvName } from "./read-strategy.ts";
export type {
  MatrixExpansion,
  ParseContext,
  ParseResult,
  Tier,
  WorkflowDefinition,
  WorkflowError,
  WorkflowErrorCode,
  WorkflowJob,
} from "./types.ts";
