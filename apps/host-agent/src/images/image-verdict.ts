// How an image preparation failure is reported (ADR 0012): the image's own fault is the user's
// (missing, malformed, hostile, too big); anything else (registry down, bad bytes twice, disk) is
// the platform's and the attempt is retried elsewhere.
import { isImageError } from "@kiln/oci";
import { errorMessage } from "@kiln/logger";
import { platformFailure, type Verdict } from "../shared/verdict.ts";
import { imageHasShell } from "./image-shell.ts";

/** Every step is the image's /bin/sh (issue 30): without one no step could start, on any host. */
export async function noShellVerdict(ref: string, rootfsDir: string): Promise<Verdict | null> {
  if (await imageHasShell(rootfsDir)) return null;
  const message = `image ${ref} has no /bin/sh: every step runs as /bin/sh -c <command> inside the job image`;
  return { outcome: "user_failure", cause: "image.no_shell", message, exitCode: null };
}

export function imageFailureVerdict(ref: string, err: unknown): Verdict {
  const message = `image ${ref}: ${errorMessage(err)}`;
  if (isImageError(err)) {
    switch (err.code) {
      case "IMAGE.NOT_FOUND":
        return { outcome: "user_failure", cause: "image.not_found", message, exitCode: null };
      case "IMAGE.UNSAFE_LAYER":
        return { outcome: "user_failure", cause: "image.unsafe_layer", message, exitCode: null };
      case "IMAGE.TOO_LARGE":
        return { outcome: "user_failure", cause: "image.too_large", message, exitCode: null };
      // The control plane pinned this image at freeze, so its registry is one the installation uses:
      // an agent that does not know it (configured by hand, or told nothing at session start) has an
      // operator's configuration gap, not a policy verdict on the job (issue 30). The platform's
      // failure: retried on another agent, never blamed on the user.
      case "IMAGE.REGISTRY_NOT_ALLOWED":
        return platformFailure("image.registry_unconfigured", message);
      // Outbound policy (docs/adr/0017): a redirect or a token realm the registry's entry does not
      // allow. Policy refused the work and neither the user's code nor the platform failed: the sixth
      // outcome (issue 20), never retried, never counted against the platform.
      case "IMAGE.HOST_NOT_ALLOWED":
      case "IMAGE.ADDRESS_NOT_ALLOWED":
        return { outcome: "blocked_by_policy", cause: "image.not_allowed", message, exitCode: null };
      case "IMAGE.INVALID_REF":
      case "IMAGE.BAD_MANIFEST":
      case "IMAGE.NO_PLATFORM":
        return { outcome: "user_failure", cause: "image.invalid", message, exitCode: null };
      default:
        break;
    }
  }
  return platformFailure("image.pull_failed", message);
}
