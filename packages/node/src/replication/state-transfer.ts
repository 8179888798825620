import type { EntitlementLedger } from "@heddle/ledger";

/** One prepared full-state transfer: the fragments of one state at one `upThrough`, sent as one `transfer`. */
export interface PreparedTransfer {
  readonly transfer: number;
  readonly upThrough: number;
  readonly fragments: readonly EntitlementLedger[];
}

/**
 * Full-state transfers (node.md §5.2 `state`, §4.2): the sending side prepares the state's fragments
 * once per (state, seq) and reuses them for every peer that needs them — first contacts of many peers
 * cost one split — and numbers each distinct transfer, so a receiver tracks only the latest one.
 */
export class StateTransfers {
  #counter = 0;
  #cached: { version: number; seq: number; prepared: PreparedTransfer } | null = null;

  /**
   * The transfer for the state at `version` (the replica's change counter) and `seq`, built by `split`
   * only when either changed since the last call.
   */
  prepare(version: number, seq: number, split: () => readonly EntitlementLedger[]): PreparedTransfer {
    const c = this.#cached;
    if (c !== null && c.version === version && c.seq === seq) return c.prepared;
    const prepared = { transfer: ++this.#counter, upThrough: seq, fragments: split() };
    this.#cached = { version, seq, prepared };
    return prepared;
  }
}
