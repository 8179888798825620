/** Messages between the demo orchestrator and its peer processes: one JSON object per line. */

/** Orchestrator → peer (stdin). */
export type PeerCommand =
  | { cmd: "roster"; entries: { id: string; addrs: string[] }[] }
  | { cmd: "block"; peers: string[] }
  | { cmd: "drain" }
  | { cmd: "exit" };

/** One bound-metrics row, amounts as decimal strings. */
export interface BoundRow {
  parent: string;
  roster: number;
  configuredWorstCase: string;
  currentBound: string;
  observedDeviation: string;
  isConsistent: boolean;
}

/** Peer → orchestrator (stdout). */
export type PeerReport =
  | { type: "listening"; index: number; id: string; addrs: string[]; restoredReservations: number }
  | {
      type: "status";
      index: number;
      id: string;
      /** FNV-1a-64 of the canonical ledger: equal digests mean equal ledgers. */
      digest: string;
      /** Per edge: committed service (issued − returned) and spent, decimal strings. */
      edges: Record<string, { committed: string; spent: string; issued: string }>;
      bounds: BoundRow[];
      conservation: { minted: string; held: string; leafSpent: string; ok: boolean };
      conflicts: string[];
      negativeHoldings: number;
      framesRejected: Record<string, number>;
      unreachable: string[];
      blocked: boolean;
      charged: string;
      completions: number;
      inFlight: number;
      draining: boolean;
      failed: boolean;
    }
  | { type: "error"; index: number; message: string };
