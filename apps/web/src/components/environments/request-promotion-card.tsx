"use client";
import { Card, Field, Form } from "@kiln/ui";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { GateReasons } from "./gate-reasons.tsx";
import { ArtifactPicker } from "./artifact-picker.tsx";
import { serverError, ServerErrorInline } from "./server-error.tsx";

interface Decided {
  id: string;
  state: string;
  decision: { verdict: string; reasons: { gate: string; status: string; code: string; message: string }[] };
}

/** Request a promotion of an artifact chosen from the repo's attested ones; shows the verdict and each gate's reason. */
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
  const onSubmit = (fd: FormData) => {
    const artifactId = String(fd.get("artifactId") ?? "").trim();
    const reason = String(fd.get("reason") ?? "").trim();
    if (!artifactId || !reason)
      return setError({ code: "REQUEST.INVALID", message: "choose an artifact and give a reason" });
    request.mutate({ org, environmentId, artifactId, reason });
  };
  return (
    <Card title="Request promotion" id="request-promotion">
      <Form
        label="Request promotion"
        layout="grid"
        formRef={formRef}
        onSubmit={onSubmit}
        pending={request.isPending}
        submitLabel="Request promotion"
        pendingLabel="Requesting…"
        error={error ? <ServerErrorInline error={error} /> : null}
      >
        <ArtifactPicker org={org} environmentId={environmentId} />
        <Field label="Reason" name="reason" maxLength={2000} autoComplete="off" />
      </Form>
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
