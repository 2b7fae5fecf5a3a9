import { describe, expect, it } from "vitest";
import { isDomainError } from "../shared/errors.ts";
import { decideMembershipChange, type MemberRow } from "./membership-rules.ts";

const org: MemberRow[] = [
  { userId: "a", role: "admin" },
  { userId: "m", role: "member" },
];
const codeOf = (f: () => unknown) => {
  try {
    f();
    return null;
  } catch (e) {
    return isDomainError(e) ? e.code : "not a domain error";
  }
};

describe("decideMembershipChange", () => {
  it("adds a newcomer and re-roles an existing member on add", () => {
    expect(decideMembershipChange(org, { kind: "add", userId: "n", role: "auditor" })).toEqual({
      kind: "added",
      role: "auditor",
    });
    expect(decideMembershipChange(org, { kind: "add", userId: "m", role: "admin" })).toEqual({
      kind: "role_changed",
      from: "member",
      to: "admin",
    });
  });

  it("refuses to demote or remove the last admin, by any of the three paths", () => {
    expect(codeOf(() => decideMembershipChange(org, { kind: "set_role", userId: "a", role: "member" }))).toBe(
      "MEMBER.LAST_ADMIN",
    );
    expect(codeOf(() => decideMembershipChange(org, { kind: "remove", userId: "a" }))).toBe("MEMBER.LAST_ADMIN");
    expect(codeOf(() => decideMembershipChange(org, { kind: "add", userId: "a", role: "auditor" }))).toBe(
      "MEMBER.LAST_ADMIN",
    );
  });

  it("allows it once another admin exists, and removing members", () => {
    const two: MemberRow[] = [...org, { userId: "b", role: "admin" }];
    expect(decideMembershipChange(two, { kind: "remove", userId: "a" })).toEqual({ kind: "removed", role: "admin" });
    expect(decideMembershipChange(org, { kind: "remove", userId: "m" })).toEqual({ kind: "removed", role: "member" });
  });

  it("names a missing member and reports no-op role changes", () => {
    expect(codeOf(() => decideMembershipChange(org, { kind: "remove", userId: "x" }))).toBe("MEMBER.NOT_FOUND");
    expect(codeOf(() => decideMembershipChange(org, { kind: "set_role", userId: "x", role: "admin" }))).toBe(
      "MEMBER.NOT_FOUND",
    );
    expect(decideMembershipChange(org, { kind: "set_role", userId: "a", role: "admin" })).toEqual({
      kind: "unchanged",
      role: "admin",
    });
  });
});
