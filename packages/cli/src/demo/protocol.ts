/** Messages between the demo orchestrator and its peer processes: one JSON object per line. */

/** Orchestrator → peer (stdin). */
export type PeerCommand =
  | { cmd: "roster"; entries: { id: string; addrs: string[] }[] }
  | { cmd: "block"; peers: string[] }
  | { cmd: "drain" }
  | { cmd: "exit" }
  /** Governed mode: run one control act under a durable key (retried with it until its outcome is known). */
  | { cmd: "control"; ref: number; key: { client: string; seq: number }; act: ControlAct }
  /** Governed mode: spend down everything held under these (closing) edges, exactly. */
  | { cmd: "drain-edges"; edges: string[] };

/** A control act the orchestrator asks a governed peer for. */
export type ControlAct =
  | { op: "mint"; holder: string; amount: string }
  | { op: "prepare"; id: string; parent: string; child: string; weight: string }
  | { op: "activate" | "close" | "retire"; edge: string };

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
      /** Per edge: committed service (issued − returned), spent and outstanding, decimal strings. */
      edges: Record<string, { committed: string; spent: string; issued: string; outstanding: string }>;
      /** Every edge this peer's ledger knows: its record and lifecycle (governed reshapes add generations). */
      records: Record<string, { parent: string; child: string; weight: string; lifecycle: string }>;
      /** Governed mode: whether this peer's writer gate is open, and the control prefix it applied. */
      writable: boolean;
      controlApplied: number;
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
  | { type: "error"; index: number; message: string }
  /** Governed mode: the outcome of a `control` command (`outcome.kind` is "applied" or "conflict"). */
  | { type: "control"; index: number; ref: number; ok: boolean; kind: string; detail: string }
  /** Peer 0: where its live dashboard is served (or why it is not). */
  | { type: "dashboard"; index: number; url: string };
