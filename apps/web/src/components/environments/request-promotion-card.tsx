"use client";
import { Button, Card, Field } from "@kiln/ui";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRef, useState, type FormEvent } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { GateReasons } from "./gate-reasons.tsx";
import { serverError, ServerErrorText } from "./server-error.tsx";

interface Decided {
  id: string;
  state: string;
  decision: { verdict: string; reasons: { gate: string; status: string; code: string; message: string }[] };
}

/** Request a promotion of one artifact (by id) here; shows the verdict and each gate's reason. */
export function RequestPromotionCard({ org, environmentId }: { org: string; environmentId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const formRef = useRef<HTMLFormElement>(null);
  const [error, setError] = useState<{ code: string; message: string } | null>(null);
  const [decided, setDecided] = useState<Decided | null>(null);
  const request = useMutation(
    trpc.promotions.request.mutationOptions({
      onMutate: () => {
        setError(null);
        setDecided(null);
      },
      onSuccess: async (p) => {
        formRef.current?.reset();
        setDecided(p);
        await queryClient.invalidateQueries({ queryKey: trpc.environments.get.queryKey({ org, environmentId }) });
      },
      onError: (e) => setError(serverError(e)),
    }),
  );
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const fd = new FormData(e.currentTarget);
    const artifactId = String(fd.get("artifactId") ?? "").trim();
    const reason = String(fd.get("reason") ?? "").trim();
    if (!artifactId || !reason)
      return setError({ code: "REQUEST.INVALID", message: "enter the artifact id and a reason" });
    request.mutate({ org, environmentId, artifactId, reason });
  };
  return (
    <Card title="Request promotion" id="request-promotion">
      <form ref={formRef} noValidate onSubmit={onSubmit} aria-label="Request promotion" className="space-y-3">
        <div className="grid gap-3 sm:grid-cols-2">
          <Field label="Artifact id" name="artifactId" autoComplete="off" spellCheck={false} className="font-mono" />
          <Field label="Reason" name="reason" maxLength={2000} autoComplete="off" />
        </div>
        <Button type="submit" variant="primary" disabled={request.isPending}>
          {request.isPending ? "Requesting…" : "Request promotion"}
        </Button>
      </form>
      {error ? <ServerErrorText error={error} /> : null}
      {decided ? (
        <div role="status" className="mt-3 space-y-2" data-testid="promotion-decision">
          <p className="text-sm">
            Verdict <strong data-testid="decision-verdict">{decided.decision.verdict}</strong>, promotion{" "}
            {decided.state.replace("_", " ")}.
          </p>
          <GateReasons reasons={decided.decision.reasons} />
        </div>
      ) : null}
    </Card>
  );
}
