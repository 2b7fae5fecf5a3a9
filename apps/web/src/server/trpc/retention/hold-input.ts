import { z } from "zod";

export const holdRef = z.object({ artifactId: z.string().uuid("not an artifact id") });
export const addHoldInput = holdRef.extend({
  reason: z.string().trim().min(1, "give a reason").max(2000, "at most 2000 characters"),
});
