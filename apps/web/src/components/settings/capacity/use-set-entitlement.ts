"use client";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { formErrorsOf, NO_ERRORS, numberOrNull, type FormErrors } from "../form-errors.ts";
import { useRefreshSettings } from "../use-settings.ts";

/** Sets a pool's slots, weight and hard cap (platform admins), for the row editor and the add form. */
export function useSetEntitlement(org: string, onDone: () => void) {
  const trpc = useTRPC();
  const refresh = useRefreshSettings(org);
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const m = useMutation(
    trpc.tenants.setEntitlement.mutationOptions({
      onMutate: () => setErrors(NO_ERRORS),
      onSuccess: async () => {
        await refresh();
        onDone();
      },
      onError: (e) => setErrors(formErrorsOf(e)),
    }),
  );
  const submit = (pool: string, data: FormData) => {
    const slots = numberOrNull(data.get("slots"));
    const weight = numberOrNull(data.get("weight"));
    const hardCap = numberOrNull(data.get("hardCap"));
    // Only what JSON cannot carry is checked here (empty, not a number: NaN would arrive as null);
    // the limits are the server's, and its messages are shown as they come.
    const missing: Record<string, string> = {};
    if (!pool) missing.pool = "enter a pool name";
    if (slots === null) missing.slots = "enter the number of slots";
    if (weight === null) missing.weight = "enter a weight";
    for (const [k, v] of Object.entries({ slots, weight, hardCap }))
      if (v !== null && !Number.isFinite(v)) missing[k] = "enter a whole number";
    if (Object.keys(missing).length > 0 || slots === null || weight === null)
      return setErrors({ fields: missing, message: null });
    m.mutate({ org, pool, slots, weight, hardCap });
  };
  return { submit, errors, setErrors, pending: m.isPending };
}
