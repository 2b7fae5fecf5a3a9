import { handlers } from "@/server/auth/index.ts";

export const dynamic = "force-dynamic";
export const { GET, POST } = handlers;
