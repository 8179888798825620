/** The three claim modes of claims.md, as every answer names them. */
export type ClaimsMode = "granted" | "keeper" | "advisory";

/**
 * What each mode promises, in one sentence per mode (claims.md's table). Every answer of
 * the node, the daemon's HTTP API and `heddle claims` carries its mode's sentence, so a
 * caller never mistakes a best-effort answer for an exclusive one.
 */
export const CLAIM_GUARANTEES: Readonly<Record<ClaimsMode, string>> = Object.freeze({
  granted:
    "linearizable and fenced: one claims table applied in Raft log order grants at most the key's capacity; every grant carries a fencing token the resource must check",
  keeper:
    "a lease by one peer with settling: every peer applies the part's rule to the claims it has heard; after the settling time, peers that have heard each other agree on one keeper (act only when mayAct; sure adds every other claimant heard lately); clocks assumed within a minute",
  advisory:
    "best effort, no exclusion: a contested item converges in one merge to the earliest claimant (claimedAt, peer); losers see their duplicates; claims expire",
});
