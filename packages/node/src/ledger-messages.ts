import { canonicalBytes } from "./canonical-json.ts";
import type { RejectReason } from "./rejection.ts";
import {
  counterField, digestField, exactKeys, idField, literalField, readEnvelope, readSchema, schemaRequire, textField, type WireRead,
} from "./wire-schema.ts";

/** A delta: one part of the patch of one local call (node.md §5.2). */
export interface DeltaMessage { kind: "delta"; genesis: string; sender: string; inc: number; seq: number; part: number; parts: number; value: string }
/** Acknowledges every seq of `sender`'s incarnation `inc` up to `seq`. */
export interface AckMessage { kind: "ack"; genesis: string; acker: string; sender: string; inc: number; seq: number }
/** Asks `sender` to resend seqs `from … to` of incarnation `inc`. */
export interface ResendMessage { kind: "resend"; genesis: string; requester: string; sender: string; inc: number; from: number; to: number }
/** Anti-entropy digest of the sender's whole state. */
export interface DigestMessage { kind: "digest"; genesis: string; sender: string; inc: number; root: string; upThrough: number }
/** Asks `sender` for its full state after a digest mismatch. */
export interface StateRequestMessage { kind: "state-request"; genesis: string; requester: string; sender: string }
/** One part of a full-state transfer. */
export interface StateMessage { kind: "state"; genesis: string; sender: string; inc: number; upThrough: number; transfer: number; part: number; parts: number; value: string }

/** Every ledger-channel message. */
export type LedgerMessage = DeltaMessage | AckMessage | ResendMessage | DigestMessage | StateRequestMessage | StateMessage;

const KEYS: Record<LedgerMessage["kind"], readonly string[]> = {
  delta: ["v", "kind", "genesis", "sender", "inc", "seq", "part", "parts", "value"],
  ack: ["v", "kind", "genesis", "acker", "sender", "inc", "seq"],
  resend: ["v", "kind", "genesis", "requester", "sender", "inc", "from", "to"],
  digest: ["v", "kind", "genesis", "sender", "inc", "root", "upThrough"],
  "state-request": ["v", "kind", "genesis", "requester", "sender"],
  state: ["v", "kind", "genesis", "sender", "inc", "upThrough", "transfer", "part", "parts", "value"],
};

/** Canonical bytes of a ledger-channel message (adds `v: 1`). */
export function encodeLedgerMessage(m: LedgerMessage): Uint8Array {
  return canonicalBytes({ v: 1, ...m });
}

/** The field of a ledger message that must equal the authenticated frame sender. */
export function authorOf(m: LedgerMessage): string {
  switch (m.kind) {
    case "delta":
    case "digest":
    case "state":
      return m.sender;
    case "ack":
      return m.acker;
    case "resend":
    case "state-request":
      return m.requester;
  }
}

/**
 * Reads a ledger-channel frame: envelope, exact schema, then genesis and authorship against the
 * receiving node (node.md §4.3). The ledger value inside is decoded later (`bad-value`).
 */
export function readLedgerMessage(frame: Uint8Array, from: string, genesis: string): WireRead<LedgerMessage> {
  const env = readEnvelope(frame);
  if (!env.ok) return env;
  const o = env.message;
  const r = readSchema((): LedgerMessage => {
    const kind = literalField(o.kind, ["delta", "ack", "resend", "digest", "state-request", "state"] as const);
    exactKeys(o, KEYS[kind]);
    const g = digestField(o.genesis);
    switch (kind) {
      case "delta": {
        const m: DeltaMessage = { kind, genesis: g, sender: idField(o.sender), inc: counterField(o.inc), seq: counterField(o.seq), part: counterField(o.part), parts: counterField(o.parts), value: textField(o.value) };
        schemaRequire(m.seq >= 1 && m.parts >= 1 && m.part < m.parts);
        return m;
      }
      case "ack":
        return { kind, genesis: g, acker: idField(o.acker), sender: idField(o.sender), inc: counterField(o.inc), seq: counterField(o.seq) };
      case "resend": {
        const m: ResendMessage = { kind, genesis: g, requester: idField(o.requester), sender: idField(o.sender), inc: counterField(o.inc), from: counterField(o.from), to: counterField(o.to) };
        schemaRequire(m.from >= 1 && m.from <= m.to);
        return m;
      }
      case "digest":
        return { kind, genesis: g, sender: idField(o.sender), inc: counterField(o.inc), root: digestField(o.root), upThrough: counterField(o.upThrough) };
      case "state-request":
        return { kind, genesis: g, requester: idField(o.requester), sender: idField(o.sender) };
      case "state": {
        const m: StateMessage = { kind, genesis: g, sender: idField(o.sender), inc: counterField(o.inc), upThrough: counterField(o.upThrough), transfer: counterField(o.transfer), part: counterField(o.part), parts: counterField(o.parts), value: textField(o.value) };
        schemaRequire(m.parts >= 1 && m.part < m.parts);
        return m;
      }
    }
  });
  if (!r.ok) return r;
  if (r.message.genesis !== genesis) return { ok: false, reason: "genesis-mismatch" satisfies RejectReason };
  if (authorOf(r.message) !== from) return { ok: false, reason: "not-author" };
  return r;
}
