import type { Holding } from "./claims-types.ts";

/**
 * What is held, as a member reads it (claims.md §2 rule 8): one line per claim, in
 * the order given (pass `open()`, which is the order taken), naming key, holder,
 * mode, token, and scope, lease and label when present. An empty list reads
 * "nothing is held".
 */
export function heldList(holdings: readonly Holding[]): string {
  if (holdings.length === 0) return "nothing is held";
  return holdings
    .map((h) => {
      const parts = [`${h.mode}`, `token ${h.token}`, `since ${h.since}`];
      if (h.scope !== undefined) parts.push(`scope ${h.scope}`);
      if (h.expiresAt !== undefined) parts.push(`lease until ${h.expiresAt}`);
      const label = h.label !== undefined ? ` — ${h.label}` : "";
      return `${h.key}: held by ${h.holder} (${parts.join(", ")})${label}`;
    })
    .join("\n");
}
