export { WORKFLOW_LIMITS } from "./limits.ts";
export { parseWorkflow } from "./parse-workflow.ts";
export type {
  ParseResult,
  Tier,
  WorkflowDefinition,
  WorkflowError,
  WorkflowJob,
} from "./types.ts";
