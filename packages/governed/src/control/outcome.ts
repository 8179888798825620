/**
 * What a control act resolved to (governed.md §2.3), and the canonical JSON form outcomes are recorded in (the
 * session table, and through it the `ControlState` snapshot). Every committed act yields the same outcome on every
 * peer, because it is computed from the log prefix alone.
 */
import { AttachmentId, GroupId, MAX, MintId, ReplicaId, Weight } from "@heddle/ledger";
import type { AttachmentRecord, Lifecycle } from "@heddle/ledger";
import type { ClaimsTable } from "@heddle/claims";
import type { LogIndex, ProposalKey } from "../raft/types.ts";
import type { Canonical } from "./canonical-json.ts";

/** An amount of service units (ledger.md §2.1): a `bigint` in the signed 64-bit range. */
export type Amount = bigint;

/** The return value of the `ClaimsTable` call a claims-family act made (a refused take included). */
export type ClaimsResult = ReturnType<ClaimsTable["take" | "release" | "releaseAll" | "releaseScope" | "renew"]>;

/** Why an act was refused (governed.md §2.3). */
export type ControlConflict =
  | { readonly reason: "dualInbound"; readonly child: GroupId; readonly incumbent: AttachmentId; readonly rejected: AttachmentId }
  | { readonly reason: "unknownEdge"; readonly edge: AttachmentId }
  | { readonly reason: "recordMismatch"; readonly edge: AttachmentId; readonly existing: AttachmentRecord; readonly proposed: AttachmentRecord }
  | { readonly reason: "invalidRecord"; readonly edge: AttachmentId; readonly detail: "selfLoop" | "rootAsChild" }
  | { readonly reason: "wouldCycle"; readonly edge: AttachmentId; readonly path: readonly AttachmentId[] }
  | { readonly reason: "lifecycleRegression"; readonly edge: AttachmentId; readonly current: Lifecycle; readonly requested: Lifecycle }
  | { readonly reason: "notClosing"; readonly edge: AttachmentId; readonly current: Lifecycle }
  | { readonly reason: "notActive"; readonly edge: AttachmentId; readonly current: Lifecycle }
  | { readonly reason: "notDrained"; readonly edge: AttachmentId; readonly outstanding: Amount; readonly positions: ReadonlyMap<ReplicaId, Amount> }
  | { readonly reason: "notSelf"; readonly replica: ReplicaId; readonly proposer: ReplicaId }
  | { readonly reason: "overflow"; readonly what: "mintedTotal" }
  | { readonly reason: "keyReuse"; readonly key: ProposalKey }
  | { readonly reason: "stale"; readonly key: ProposalKey };

/**
 * The outcome of one act. `index === null` on a conflict means it was refused locally before anything was proposed
 * (only `notDrained` today).
 */
export type ControlOutcome =
  | {
      readonly kind: "applied";
      readonly index: LogIndex;
      readonly key: ProposalKey;
      readonly noop: boolean;
      readonly mintId?: MintId;
      readonly claims?: ClaimsResult;
      /**
       * Only on a `claims.release` that named a token and released nothing: the token of the holder's live grant of
       * the key at that entry (a newer grant than the one named), or `null` when the holder held nothing there.
       */
      readonly heldToken?: number | null;
    }
  | { readonly kind: "conflict"; readonly index: LogIndex | null; readonly key: ProposalKey | null; readonly conflict: ControlConflict };

// ------------------------------------------------------------------------------------------------ codec

function recordJson(r: AttachmentRecord): Canonical {
  return { id: r.id, parent: r.parent, child: r.child, num: r.weight.num, den: r.weight.den };
}

function keyJson(k: ProposalKey | null): Canonical {
  return k === null ? null : { client: k.client, seq: k.seq };
}

function conflictJson(c: ControlConflict): Canonical {
  switch (c.reason) {
    case "recordMismatch":
      return { reason: c.reason, edge: c.edge, existing: recordJson(c.existing), proposed: recordJson(c.proposed) };
    case "notDrained":
      return { reason: c.reason, edge: c.edge, outstanding: c.outstanding, positions: [...c.positions].sort((a, b) => (a[0] < b[0] ? -1 : 1)) };
    case "keyReuse":
    case "stale":
      return { reason: c.reason, key: keyJson(c.key) };
    default:
      return c as unknown as Canonical;
  }
}

/** The canonical JSON value of an outcome (what the session table records). */
export function outcomeJson(o: ControlOutcome): Canonical {
  if (o.kind === "conflict") return { kind: o.kind, index: o.index, key: keyJson(o.key), conflict: conflictJson(o.conflict) };
  return { kind: o.kind, index: o.index, key: keyJson(o.key), noop: o.noop, mintId: o.mintId, claims: o.claims as unknown as Canonical, heldToken: o.heldToken };
}

/** Thrown by `outcomeFromJson` on a value `outcomeJson` could not have produced. */
export class OutcomeDecodeError extends Error {
  override readonly name = "OutcomeDecodeError";
}

type Obj = Record<string, unknown>;

function bad(why: string): never {
  throw new OutcomeDecodeError(`recorded outcome: ${why}`);
}

function obj(v: unknown, what: string): Obj {
  if (typeof v !== "object" || v === null || Array.isArray(v)) bad(`${what} must be an object`);
  return v as Obj;
}

function s(v: unknown, what: string): string {
  if (typeof v !== "string" || v.length === 0) bad(`${what} must be a non-empty string`);
  return v;
}

function n(v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v)) bad(`${what} must be a safe integer`);
  return v;
}

function big(v: unknown, what: string): bigint {
  if (typeof v !== "string" || !/^(0|-?[1-9][0-9]*)$/.test(v)) bad(`${what} must be a decimal string`);
  const x = BigInt(v);
  if (x > MAX || x < -MAX - 1n) bad(`${what} is outside int64`);
  return x;
}

const LIFECYCLES = new Set(["PREPARED", "ACTIVE", "CLOSING", "RETIRED"]);

function lifecycle(v: unknown, what: string): Lifecycle {
  if (typeof v !== "string" || !LIFECYCLES.has(v)) bad(`${what} must be a lifecycle`);
  return v as Lifecycle;
}

function key(v: unknown, what: string): ProposalKey {
  const o = obj(v, what);
  return { client: s(o.client, `${what}.client`), seq: n(o.seq, `${what}.seq`) };
}

function rec(v: unknown, what: string): AttachmentRecord {
  const o = obj(v, what);
  return {
    id: AttachmentId(s(o.id, `${what}.id`)),
    parent: GroupId(s(o.parent, `${what}.parent`)),
    child: GroupId(s(o.child, `${what}.child`)),
    weight: Weight.of(big(o.num, `${what}.num`), big(o.den, `${what}.den`)),
  };
}

function conflict(v: unknown): ControlConflict {
  const o = obj(v, "conflict");
  const edge = (): AttachmentId => AttachmentId(s(o.edge, "conflict.edge"));
  switch (o.reason) {
    case "dualInbound":
      return { reason: o.reason, child: GroupId(s(o.child, "child")), incumbent: AttachmentId(s(o.incumbent, "incumbent")), rejected: AttachmentId(s(o.rejected, "rejected")) };
    case "unknownEdge":
      return { reason: o.reason, edge: edge() };
    case "recordMismatch":
      return { reason: o.reason, edge: edge(), existing: rec(o.existing, "existing"), proposed: rec(o.proposed, "proposed") };
    case "invalidRecord":
      if (o.detail !== "selfLoop" && o.detail !== "rootAsChild") bad("invalidRecord.detail");
      return { reason: o.reason, edge: edge(), detail: o.detail };
    case "wouldCycle":
      if (!Array.isArray(o.path)) bad("wouldCycle.path must be an array");
      return { reason: o.reason, edge: edge(), path: o.path.map((x: unknown) => AttachmentId(s(x, "path"))) };
    case "lifecycleRegression":
      return { reason: o.reason, edge: edge(), current: lifecycle(o.current, "current"), requested: lifecycle(o.requested, "requested") };
    case "notClosing":
    case "notActive":
      return { reason: o.reason, edge: edge(), current: lifecycle(o.current, "current") };
    case "notDrained": {
      if (!Array.isArray(o.positions)) bad("notDrained.positions must be an array");
      const positions = new Map<ReplicaId, Amount>();
      for (const p of o.positions as unknown[]) {
        if (!Array.isArray(p) || p.length !== 2) bad("notDrained.positions entries are pairs");
        positions.set(ReplicaId(s(p[0], "position replica")), big(p[1], "position"));
      }
      return { reason: o.reason, edge: edge(), outstanding: big(o.outstanding, "outstanding"), positions };
    }
    case "notSelf":
      return { reason: o.reason, replica: ReplicaId(s(o.replica, "replica")), proposer: ReplicaId(s(o.proposer, "proposer")) };
    case "overflow":
      if (o.what !== "mintedTotal") bad("overflow.what");
      return { reason: o.reason, what: o.what };
    case "keyReuse":
    case "stale":
      return { reason: o.reason, key: key(o.key, "conflict.key") };
    default:
      return bad(`unknown conflict reason ${JSON.stringify(o.reason)}`);
  }
}

/** Rebuilds an outcome from `outcomeJson`'s value (after a JSON round trip); throws `OutcomeDecodeError`. */
export function outcomeFromJson(v: unknown): ControlOutcome {
  const o = obj(v, "outcome");
  const k = o.key === null ? null : key(o.key, "key");
  if (o.kind === "conflict") {
    const index = o.index === null ? null : n(o.index, "index");
    return { kind: "conflict", index, key: k, conflict: conflict(o.conflict) };
  }
  if (o.kind !== "applied") bad(`unknown kind ${JSON.stringify(o.kind)}`);
  if (k === null) bad("an applied outcome carries its key");
  if (typeof o.noop !== "boolean") bad("noop must be a boolean");
  const out: Record<string, unknown> = { kind: "applied", index: n(o.index, "index"), key: k, noop: o.noop };
  if (o.mintId !== undefined) out.mintId = MintId(s(o.mintId, "mintId"));
  if (o.claims !== undefined) out.claims = o.claims as ClaimsResult;
  if (o.heldToken !== undefined) out.heldToken = o.heldToken === null ? null : n(o.heldToken, "heldToken");
  return out as ControlOutcome;
}
