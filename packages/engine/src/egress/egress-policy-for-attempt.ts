import type { DbOrTx } from "@kiln/db";
import type { agentProtocol, TrustClass } from "@kiln/domain";
import type { z } from "zod";

export type EgressPolicy = z.infer<typeof agentProtocol.egressPolicy>;

/**
 * The attempt's effective egress policy, computed at claim and sent in the ticket: the run's trust
 * class (fixed at admission) and the org's allow-list as it stands now. The platform's own
 * endpoints are in no policy: no sandbox reaches them (docs/adr/0019). Untrusted runs get an empty list: the allow-list never leaves the control plane for them
 * (the proxy's decideEgress ignores it for untrusted runs anyway).
 */
export async function egressPolicyForAttempt(
  db: DbOrTx,
  input: { orgId: string; trustClass: TrustClass },
): Promise<EgressPolicy> {
  const allowList =
    input.trustClass === "trusted"
      ? (
          await db.$queryRaw<
            { pattern: string }[]
          >`SELECT pattern FROM egress_rule WHERE org_id = ${input.orgId}::uuid ORDER BY pattern LIMIT 1000`
        ).map((r) => r.pattern)
      : [];
  return egressPolicy({ ...input, allowList });
}

/** The policy from its parts (the claim reads the allow-list inside its own transaction). */
export function egressPolicy(input: { trustClass: TrustClass; allowList: readonly string[] }): EgressPolicy {
  const allowList = input.trustClass === "trusted" ? [...input.allowList] : [];
  return { trustClass: input.trustClass, allowList };
}
