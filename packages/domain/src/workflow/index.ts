export { WORKFLOW_LIMITS } from "./limits.ts";
export { parseWorkflow } from "./parse-workflow.ts";
export type {
  ParseResult,
  RunsOn,
  WorkflowSchedule,
  Tier,
  WorkflowDefinition,
  WorkflowError,
  WorkflowJob,
} from "./types.ts";
