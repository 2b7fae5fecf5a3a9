export { WORKFLOW_LIMITS } from "./limits.ts";
export { parseWorkflow } from "./parse-workflow.ts";
export { MATRIX_LIMITS, matrixEnvName } from "./read-strategy.ts";
export type {
  MatrixExpansion,
  ParseContext,
  ParseResult,
  RunsOn,
  WorkflowSchedule,
  Tier,
  WorkflowDefinition,
  WorkflowError,
  WorkflowErrorCode,
  WorkflowJob,
} from "./types.ts";
