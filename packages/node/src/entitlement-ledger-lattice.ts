import { EntitlementLedger } from "@heddle/ledger";
import type { LedgerLattice } from "./ledger-lattice.ts";

/** `EntitlementLedger` as a `LedgerLattice`: join, structural equality and ledger.md §10's encoding. */
export const entitlementLedgerLattice: LedgerLattice<EntitlementLedger> = {
  empty: EntitlementLedger.EMPTY,
  join: (a, b) => a.join(b),
  equals: (a, b) => a.equals(b),
  encode: (a) => a.encode(),
  decode: (text) => EntitlementLedger.decode(text),
};
