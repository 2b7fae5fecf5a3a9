"use client";
import { createContext, useContext, type ReactNode } from "react";

export interface OrgInfo {
  slug: string;
  role: "admin" | "member" | "auditor";
  login: string;
}

const OrgContext = createContext<OrgInfo | null>(null);

/** The current org and the user's role in it, resolved by the org layout on the server. */
export function OrgProvider({ value, children }: { value: OrgInfo; children: ReactNode }) {
  return <OrgContext.Provider value={value}>{children}</OrgContext.Provider>;
}

export function useOrg(): OrgInfo {
  const v = useContext(OrgContext);
  if (!v) throw new Error("useOrg outside an org page");
  return v;
}

/** Mirrors the server's OPERATOR_ROLES; the server refuses regardless of what the UI shows. */
export function canOperate(role: OrgInfo["role"]): boolean {
  return role === "admin" || role === "member";
}
