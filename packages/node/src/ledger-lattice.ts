/**
 * What replication needs from a ledger value: a join-semilattice with a canonical text encoding
 * (ledger.md §4.3, §10). `decode` throws on a value the ledger's decoder refuses. Replication is
 * written against this interface so it never depends on anything but the merge laws and the
 * encoding; `entitlementLedgerLattice` adapts `EntitlementLedger`.
 */
export interface LedgerLattice<L> {
  readonly empty: L;
  join(a: L, b: L): L;
  equals(a: L, b: L): boolean;
  /** Canonical text (ledger.md §10). */
  encode(a: L): string;
  decode(text: string): L;
}
