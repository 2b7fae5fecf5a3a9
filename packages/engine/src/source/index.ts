// Public API of the source capability (conventions 4): the workflow file at a pinned commit.
export { fetchWorkflowFile } from "./fetch-workflow.ts";
