import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/prisma/client.ts";

export type Db = PrismaClient;
/** An open interactive transaction; data functions accept either (conventions rule 7). */
export type Tx = Parameters<Parameters<PrismaClient["$transaction"]>[0]>[0];
export type DbOrTx = Db | Tx;

export interface DbOptions {
  url: string;
  /** Pool size per process; the claim path holds a connection for one short transaction. */
  max?: number;
}

export function createDb(opts: DbOptions): Db {
  const adapter = new PrismaPg({ connectionString: opts.url, max: opts.max ?? 10 });
  return new PrismaClient({ adapter });
}
