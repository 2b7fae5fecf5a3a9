import { errorMessage, type Logger } from "@kiln/logger";
import type { JobTicket } from "../control-client.ts";
import type { LogShipper } from "../logs/index.ts";
import { SandboxLostError, type Sandbox } from "../sandboxes/index.ts";
import { platformFailure, stepFailureVerdict, SUCCESS, type Verdict } from "../shared/verdict.ts";
import { wireMs, type MonotonicClock } from "../timing.ts";

/** What the steps phase is given by its attempt. */
export interface StepsPhase {
  ticket: JobTicket;
  sandbox: Sandbox;
  /** The steps' environment (step-env.ts). */
  env: Record<string, string>;
  logs: LogShipper;
  log: Logger;
  signal: AbortSignal;
  now: MonotonicClock;
  /** Monotonic time the claim response arrived. */
  claimedAt: number;
  /** The first step is about to start. */
  onFirstStep: () => void;
  /** A step ran for this long (the attempt's execution_ms). */
  onStepRan: (durationMs: number) => void;
}

/** Runs the job's steps in order: SUCCESS, the first failure's verdict, or null once stopped. */
export async function runSteps(p: StepsPhase): Promise<Verdict | null> {
  const output = p.logs;
  try {
    for (const [index, command] of p.ticket.job.steps.entries()) {
      if (p.signal.aborted) return null;
      if (index === 0) p.onFirstStep();
      p.log.info("step started", { step: index + 1 });
      let result;
      try {
        result = await p.sandbox.runStep(command, p.env, {}, ...firstOutput(p, index === 0));
      } catch (err) {
        if (err instanceof SandboxLostError)
          return platformFailure("sandbox.lost", `the sandbox died during step ${index + 1}: ${errorMessage(err)}`);
        return platformFailure("sandbox.step_start_failed", `step ${index + 1} could not start: ${errorMessage(err)}`);
      }
      p.onStepRan(result.durationMs);
      output.endStep();
      p.log.info("step finished", {
        step: index + 1,
        exit_code: result.exitCode,
        signal: result.signal,
        duration_ms: wireMs(result.durationMs),
      });
      if (p.signal.aborted) return null;
      const failure = stepFailureVerdict(index, command, result);
      if (failure) return failure;
    }
    return SUCCESS;
  } finally {
    output.endStep();
  }
}

/**
 * The step's stdout and stderr sinks. The first byte the user's command writes is when the job
 * really started (for a microVM that is after clock, entropy and workspace reach the guest): logged
 * for trigger -> first-step-start measurements (bench/sandboxes).
 */
function firstOutput(p: StepsPhase, firstStep: boolean): [(chunk: Buffer) => void, (chunk: Buffer) => void] {
  let quiet = firstStep;
  const first = (sink: (chunk: Buffer) => void) => (chunk: Buffer) => {
    if (quiet) {
      quiet = false;
      p.log.info("first step output", { since_claim_ms: wireMs(p.now() - p.claimedAt) });
    }
    sink(chunk);
  };
  return [first(p.logs.stdout), first(p.logs.stderr)];
}
