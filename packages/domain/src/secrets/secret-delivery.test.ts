import { describe, expect, it } from "vitest";
import { decideSecretDelivery, SECRET_WITHHELD_MESSAGE } from "./secret-delivery.ts";

describe("decideSecretDelivery", () => {
  const stored = [
    { name: "A", scope: "org" as const, version: 3 },
    { name: "A", scope: "repo:r1" as const, version: 1 },
    { name: "B", scope: "org" as const, version: 2 },
    { name: "UNDECLARED", scope: "org" as const, version: 1 },
  ];
  it("delivers declared names only, the repo's over the org's, and names the missing", () => {
    expect(decideSecretDelivery({ trustClass: "trusted", declared: ["A", "B", "C"], required: false, stored })).toEqual(
      {
        kind: "deliver",
        picks: [stored[1], stored[2]],
        missing: ["C"],
        required: false,
      },
    );
  });
  it("an environment's secret overrides the repo's and the org's of the same name", () => {
    const withEnv = [...stored, { name: "A", scope: "env:e1" as const, version: 7 }];
    const d = decideSecretDelivery({ trustClass: "trusted", declared: ["A"], required: false, stored: withEnv });
    expect(d).toEqual({ kind: "deliver", picks: [withEnv[4]], missing: [], required: false });
  });
  it("withholds everything from an untrusted run, with the named reason", () => {
    expect(decideSecretDelivery({ trustClass: "untrusted", declared: ["A"], required: true, stored })).toEqual({
      kind: "withheld",
      cause: "SECRET.WITHHELD_UNTRUSTED",
      message: SECRET_WITHHELD_MESSAGE,
      required: true,
    });
    expect(SECRET_WITHHELD_MESSAGE).toBe("secrets withheld: untrusted run (fork or non-member)");
  });
  it("has nothing to do for a job that declares nothing", () => {
    expect(decideSecretDelivery({ trustClass: "trusted", declared: [], required: true, stored })).toEqual({
      kind: "none",
    });
  });
});
