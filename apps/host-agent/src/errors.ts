/**
 * An error the agent cannot recover from by retrying (bad host credential, unsupported driver).
 * The composition root logs it, shuts down gracefully and exits 1.
 */
export class FatalAgentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FatalAgentError";
  }
}
