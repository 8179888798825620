import type { EntitlementLedger } from "@heddle/ledger";

/**
 * The ledger-channel messages (node.md §5.2), decoded. Authorship is the frame's authenticated sender,
 * never a field: a delta, digest or state describes the sender's own stream; an ack or resend is about
 * the recipient's stream (it is unicast to that stream's owner). `inc` is always the incarnation of the
 * stream the message is about.
 */
export interface AckInfo {
  /** Incarnation of the acknowledged stream (the recipient's). */
  readonly inc: number;
  /** Every seq up to this one arrived. */
  readonly seq: number;
  /** The acker has the stream's base: it resynced to this incarnation (digest match or full state). */
  readonly based: boolean;
}

/** One part of the patch of one local publish (possibly several calls coalesced), with an optional piggybacked ack. */
export interface DeltaMessage {
  readonly kind: "delta";
  readonly inc: number;
  readonly seq: number;
  readonly part: number;
  readonly parts: number;
  readonly value: EntitlementLedger;
  readonly ack: AckInfo | null;
}

/** Acknowledges the recipient's stream. */
export interface AckMessage extends AckInfo {
  readonly kind: "ack";
}

/** Asks the recipient to resend its seqs `from … to` of incarnation `inc`. */
export interface ResendMessage {
  readonly kind: "resend";
  readonly inc: number;
  readonly from: number;
  readonly to: number;
}

/** The sender's state digest; it grants the recipient one `state-request`. */
export interface DigestMessage {
  readonly kind: "digest";
  readonly inc: number;
  readonly digest: string;
  readonly upThrough: number;
}

/** Asks for the recipient's full state after a digest mismatch. */
export interface StateRequestMessage {
  readonly kind: "state-request";
}

/** One part of a full-state transfer. */
export interface StateMessage {
  readonly kind: "state";
  readonly inc: number;
  readonly upThrough: number;
  readonly transfer: number;
  readonly part: number;
  readonly parts: number;
  readonly value: EntitlementLedger;
}

/** Every ledger-channel message. */
export type LedgerMessage = DeltaMessage | AckMessage | ResendMessage | DigestMessage | StateRequestMessage | StateMessage;

/** Every message kind, in wire order. */
export const MESSAGE_KINDS: readonly LedgerMessage["kind"][] = ["delta", "ack", "resend", "digest", "state-request", "state"];
