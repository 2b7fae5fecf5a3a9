import { z } from "zod";

// Wire primitives shared by more than one area of the agent protocol (not re-exported).

/** A SHA-256 digest as lowercase hex. */
export const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);
