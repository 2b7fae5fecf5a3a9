// Name resolution that refuses forbidden addresses. Every address a name resolves to is checked
// (not only the first: a client may fall back to any of them), and the check runs inside the
// socket's own lookup, so the address connected to is the address checked: a DNS answer that
// changes between a check and the connect (rebinding) cannot slip through.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { classifyAddress, type AddressClass } from "./address-policy.ts";

export class AddressRefusedError extends Error {
  override name = "AddressRefusedError";
  constructor(
    readonly host: string,
    readonly address: string,
    readonly addressClass: AddressClass,
  ) {
    super(`${host} resolves to ${address}, a ${addressClass} address this host is not configured to reach`);
  }
}

function check(host: string, addresses: readonly LookupAddress[], allowed: ReadonlySet<AddressClass>): void {
  if (addresses.length === 0) throw Object.assign(new Error(`${host}: no addresses`), { code: "ENOTFOUND" });
  for (const a of addresses) {
    const c = classifyAddress(a.address);
    if (!allowed.has(c)) throw new AddressRefusedError(host, a.address, c);
  }
}

/** Resolves `hostname` (a name or a literal, brackets allowed) and checks every address. */
export async function resolveChecked(hostname: string, allowed: ReadonlySet<AddressClass>): Promise<LookupAddress[]> {
  const bare = hostname.replace(/^\[|\]$/g, "");
  const family = isIP(bare);
  const addresses: LookupAddress[] = family
    ? [{ address: bare, family }]
    : await new Promise<LookupAddress[]>((resolve, reject) =>
        dnsLookup(bare, { all: true }, (err, list) => (err ? reject(err) : resolve(list))),
      );
  check(bare, addresses, allowed);
  return addresses;
}

/** A `lookup` for http(s).request / net.connect that only ever hands out permitted addresses. */
export function checkedLookup(allowed: ReadonlySet<AddressClass>): LookupFunction {
  return (hostname, options, callback) => {
    resolveChecked(hostname, allowed).then(
      (addresses) => {
        const wanted = options.family === 4 || options.family === 6 ? options.family : 0;
        const usable = wanted ? addresses.filter((a) => a.family === wanted) : addresses;
        if (options.all) return callback(null, usable);
        const first = usable[0];
        if (!first)
          return callback(Object.assign(new Error(`${hostname}: no IPv${wanted} address`), { code: "ENOTFOUND" }), "");
        callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ""),
    );
  };
}
