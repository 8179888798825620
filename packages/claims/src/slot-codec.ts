import { idProblem } from "./claim-key.ts";
import { ClaimsDecodeError } from "./decode-error.ts";
import { MAX_SLOT_CLAIMS, MAX_SLOT_TEXT } from "./limits.ts";
import { MAX_SLOT_VERSION } from "./peer-slots.ts";

/** A slot as it travels: format tag, author, version (a decimal string) and claim rows. */
export interface SlotDoc {
  readonly peer: string;
  readonly version: bigint;
  readonly rows: readonly unknown[];
}

/** The canonical text of a slot: `{"format","peer","version","claims"}` in this order, no white space. */
export function encodeSlotDoc(format: string, peer: string, version: bigint, rows: readonly unknown[]): string {
  return JSON.stringify({ format, peer, version: version.toString(), claims: rows });
}

/** Throws `ClaimsDecodeError` naming the slot format. */
export function slotFail(format: string, why: string, bound?: "claims" | "text"): never {
  throw new ClaimsDecodeError(`${format} slot: ${why}`, bound);
}

/** Reads the envelope of a slot, rejecting anything but the canonical shape of `format`. */
export function decodeSlotDoc(text: unknown, format: string): SlotDoc {
  if (typeof text !== "string") slotFail(format, "input must be a string");
  if (text.length > MAX_SLOT_TEXT) slotFail(format, `longer than ${MAX_SLOT_TEXT} code units`, "text");
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    slotFail(format, "not JSON");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) slotFail(format, "not an object");
  const o = doc as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length !== 4 || !["format", "peer", "version", "claims"].every((k) => keys.includes(k))) {
    slotFail(format, "fields must be exactly format, peer, version, claims");
  }
  if (o["format"] !== format) slotFail(format, `format must be ${JSON.stringify(format)}`);
  const peer = o["peer"];
  const problem = idProblem(peer, "peer");
  if (problem !== undefined) slotFail(format, problem);
  const v = o["version"];
  if (typeof v !== "string" || !/^(0|[1-9][0-9]{0,18})$/.test(v)) slotFail(format, "version must be a canonical decimal string");
  const version = BigInt(v);
  if (version > MAX_SLOT_VERSION) slotFail(format, "version above 2^63 − 1");
  const rows = o["claims"];
  if (!Array.isArray(rows)) slotFail(format, "claims must be a list");
  if (rows.length > MAX_SLOT_CLAIMS) slotFail(format, `more than ${MAX_SLOT_CLAIMS} claims`, "claims");
  return { peer: peer as string, version, rows };
}

/** A time field of a slot row: a safe integer ≥ 0, or `null` where `nullable`. */
export function slotTime(format: string, v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) slotFail(format, `${what} must be a safe integer ≥ 0`);
  return v;
}
