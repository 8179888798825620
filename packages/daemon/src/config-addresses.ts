/**
 * The config checks that need libp2p's parsers: roster peer ids and multiaddrs. Kept out of `config.ts` so that
 * reading a config — what the CLI's API verbs do before one HTTP request — loads no libp2p module
 * (`cli/test/startup-imports.test.ts`); `startDaemon` runs them before it opens or listens on anything, so a bad id
 * or address is a `ConfigError` naming its key, not a libp2p failure at the first dial or listen.
 */
import { peerIdFromString } from "@libp2p/peer-id";
import { multiaddr } from "@multiformats/multiaddr";
import type { DaemonConfig } from "./config.ts";
import type { FieldIssue } from "./schema.ts";

/** Why `id` is not a libp2p peer id (what libp2p would throw on dialling it), or null. */
function peerIdProblem(id: string): string | null {
  try {
    peerIdFromString(id);
    return null;
  } catch (e) {
    return `is not a libp2p peer id (${(e as Error).message}): give the peer's id as heddle init wrote it, e.g. 12D3KooW… (heddle peers lists them)`;
  }
}

/** Why `a` is not a multiaddr libp2p can use, or null. */
function multiaddrProblem(a: string): string | null {
  try {
    multiaddr(a);
    return null;
  } catch (e) {
    return `is not a valid multiaddr (${(e as Error).message}): write it like /ip4/127.0.0.1/tcp/7101 or /dns4/host.example/tcp/7101`;
  }
}

/** Each roster id that is not a peer id and each address that is not a multiaddr, named as the config file's key. */
export function addressIssues(c: Pick<DaemonConfig, "roster" | "listen" | "announce">): FieldIssue[] {
  const issues: FieldIssue[] = [];
  c.roster.forEach((e, i) => {
    const bad = peerIdProblem(e.id);
    if (bad !== null) issues.push({ field: `roster[${i}].id`, problem: bad });
    e.addrs.forEach((a, j) => {
      const p = multiaddrProblem(a);
      if (p !== null) issues.push({ field: `roster[${i}].addrs[${j}]`, problem: p });
    });
  });
  for (const part of ["listen", "announce"] as const) {
    c[part].forEach((a, j) => {
      const p = multiaddrProblem(a);
      if (p !== null) issues.push({ field: `p2p.${part}[${j}]`, problem: p });
    });
  }
  return issues;
}
