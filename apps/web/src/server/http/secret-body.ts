import { MAX_SECRET_VALUE_BYTES } from "@kiln/domain";
import { z } from "zod";

/** PUT .../secrets/{name}: the value only; the name is in the path and the version is assigned. */
export const secretValueBody = z.object({ value: z.string().min(1).max(MAX_SECRET_VALUE_BYTES) }).strict();
