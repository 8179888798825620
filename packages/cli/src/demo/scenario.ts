import { group, lane, lowerTopology } from "@heddle/node";
import type { AttachmentRecord } from "@heddle/ledger";

/** The root group of the demo tree. */
/** The demo's policy quantum (node.md §16 A11's `q`). */
export const QUANTUM = 20n;
/** Quanta each peer grants per `schedule` call. */
export const GRANTS_PER_SCHEDULE = 2;

export const ROOT = "root";
/** The two tenants under the root. */
export const TENANTS = ["tenant-a", "tenant-b"] as const;
/** The two lanes under each tenant. */
export const LANES = ["interactive", "batch"] as const;

/** The lane group of `tenant` named `lane`, e.g. `tenant-a/interactive`. */
export function laneGroup(tenant: string, laneName: string): string {
  return `${tenant}/${laneName}`;
}

/** Every leaf group of the demo tree, in display order. */
export function leafGroups(): string[] {
  return TENANTS.flatMap((t) => LANES.map((l) => laneGroup(t, l)));
}

/** The parents whose children compete, in display order. */
export function parents(): string[] {
  return [ROOT, ...TENANTS];
}

/** The demo tree lowered to attachment records (deterministic: every peer builds the same). */
export function demoTopology(tenantWeights: readonly [bigint, bigint], laneWeights: readonly [bigint, bigint]): AttachmentRecord[] {
  return lowerTopology(
    ROOT,
    TENANTS.map((t, i) => group(t, tenantWeights[i]!, LANES.map((l, j) => lane(laneGroup(t, l), laneWeights[j]!)))),
  );
}

/** Knobs shared by the orchestrator and every peer process. */
export interface PeerConfig {
  index: number;
  dir: string;
  seed: number;
  /** Every peer's id, index order (ids come from keys the orchestrator created). */
  ids: string[];
  tenantWeights: [string, string];
  laneWeights: [string, string];
  /** Root supply of each peer. */
  supplyPerPeer: string;
  /** Policy quantum. */
  quantum: string;
  /** Grants one `schedule` call may make: caps how fast entitlement flows down, so lanes compete. */
  grantsPerSchedule: number;
  /** How often a peer advertises demand and schedules. */
  tickMs: number;
  /** Concurrent work items per lane on each peer. */
  workersPerLane: number;
  /** Governed mode: the Raft voters (ids); every other peer is a learner. Absent in static mode. */
  voters?: string[];
  /** Peer 0 only: serve the live dashboard on 127.0.0.1:port with this token. */
  dashboard?: { port: number; token: string };
}
