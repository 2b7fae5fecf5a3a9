// One attempt from claim to report: the sandbox's life, its steps' environment, the verdict.
export { buildStepEnv } from "./step-env.ts";
