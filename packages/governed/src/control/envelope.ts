/**
 * The control log's wire envelope (governed.md §3.1): 4-byte magic `HDLC`, one version byte, then the canonical
 * JSON of the envelope. The magic makes "this is a control entry" a positive determination: bytes without it are
 * foreign (skipped); bytes with it that do not decode to exactly one canonical envelope are malformed, and the
 * apply loop halts on them.
 */
import { hash } from "node:crypto";
import { AttachmentId, GroupId, MAX, ReplicaId, Weight } from "@heddle/ledger";
import type { AttachmentRecord } from "@heddle/ledger";
import type { ClaimMode, TakeRequest } from "@heddle/claims";
import type { ProposalKey } from "../raft/types.ts";
import { canonicalJson } from "./canonical-json.ts";
import type { Canonical } from "./canonical-json.ts";
import { settingsFromJson, settingsJson } from "./control-settings.ts";
import type { ControlSettings, ListDigest } from "./control-settings.ts";

/** The four magic bytes every control entry starts with: ASCII `HDLC`. */
export const CONTROL_MAGIC: Uint8Array = Uint8Array.of(0x48, 0x44, 0x4c, 0x43);
/**
 * The envelope version this build writes; decoders are kept for every older version that can still be replayed.
 * Version 2 is version 1 plus `settings` (the proposer's decision-affecting settings, `ControlSettings`, about 150
 * bytes): the first entry of a log carrying them fixes the log's. A member writes version 2 until its log has fixed
 * them and version 1 after (`GovernedHeddleNode`); version 1 entries of earlier builds decode and apply alike; a
 * build that knows only version 1 halts at the first version 2 entry (§3.1: unknown version → halt).
 */
export const CONTROL_VERSION = 2;
/**
 * Largest encoded control entry a call may propose (a retire witness is the only unbounded part). Checked before
 * proposing, so an oversized act is a `RangeError` at the call rather than a refusal from Raft's frame budget.
 */
export const MAX_CONTROL_ENTRY_BYTES = 512 * 1024;

/** A ledger fragment as ledger.md's `encode()` text (the retire witness, §3.6). */
export type EncodedLedgerFragment = string;

/** One control act (governed.md §3.1), including the claims family (G2) and the effect-free barrier. */
export type ControlCommand =
  | { readonly op: "mint"; readonly holder: ReplicaId; readonly amount: bigint }
  | { readonly op: "prepare"; readonly record: AttachmentRecord }
  | { readonly op: "activate"; readonly edge: AttachmentId }
  | { readonly op: "close"; readonly edge: AttachmentId }
  | { readonly op: "retire"; readonly edge: AttachmentId; readonly witness?: EncodedLedgerFragment }
  | { readonly op: "enroll"; readonly replica: ReplicaId }
  | { readonly op: "depart"; readonly replica: ReplicaId }
  | { readonly op: "barrier" }
  | { readonly op: "claims.take"; readonly request: TakeRequest }
  /** `token` (optional): release only the grant stamped with it (claims.md §2 `release`); absent in older entries. */
  | { readonly op: "claims.release"; readonly holder: string; readonly key: string; readonly token?: number }
  | { readonly op: "claims.releaseAll"; readonly holder: string }
  | { readonly op: "claims.releaseScope"; readonly scope: string }
  | { readonly op: "claims.renew"; readonly holder: string; readonly key: string };

/** The envelope around every control act (governed.md §3.1). `key` is null only for the barrier. */
export interface ControlEnvelope {
  /** 1, or 2 exactly when `settings` is present. */
  readonly v: 1 | 2;
  readonly key: ProposalKey | null;
  /** Lowest seq this client may still retry (§3.10); 0 when `key` is null. */
  readonly ackFloor: number;
  /** Self-asserted (G4); read by the `depart` gate. */
  readonly proposer: ReplicaId;
  readonly cmd: ControlCommand;
  /**
   * Version 2 only: the proposer's decision-affecting settings. The first entry of a log that carries them fixes the
   * log's settings; a member whose own differ halts there, before deciding anything (`ControlState`).
   */
  readonly settings?: ControlSettings;
}

/** What a log entry's bytes are to the control plane. */
export type DecodedEntry =
  | { readonly kind: "control"; readonly envelope: ControlEnvelope }
  | { readonly kind: "foreign" }
  | { readonly kind: "malformed"; readonly why: string };

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

function recordJson(r: AttachmentRecord): Canonical {
  return { child: r.child, id: r.id, parent: r.parent, weight: { den: r.weight.den, num: r.weight.num } };
}

function takeJson(t: TakeRequest): Canonical {
  return {
    holder: t.holder,
    label: t.label,
    resources: t.resources.map((x) => ({ key: x.key, mode: x.mode })),
    scope: t.scope,
    ttlMs: t.ttlMs,
  };
}

/** The canonical JSON value of a command (the input of `digestOf`). */
export function commandJson(c: ControlCommand): Canonical {
  switch (c.op) {
    case "mint":
      return { amount: c.amount, holder: c.holder, op: c.op };
    case "prepare":
      return { op: c.op, record: recordJson(c.record) };
    case "activate":
    case "close":
      return { edge: c.edge, op: c.op };
    case "retire":
      return { edge: c.edge, op: c.op, witness: c.witness };
    case "enroll":
    case "depart":
      return { op: c.op, replica: c.replica };
    case "barrier":
      return { op: c.op };
    case "claims.take":
      return { op: c.op, request: takeJson(c.request) };
    case "claims.release":
      // an absent token is left out, so a release without one encodes (and digests) exactly as before
      return { holder: c.holder, key: c.key, op: c.op, token: c.token };
    case "claims.renew":
      return { holder: c.holder, key: c.key, op: c.op };
    case "claims.releaseAll":
      return { holder: c.holder, op: c.op };
    case "claims.releaseScope":
      return { op: c.op, scope: c.scope };
  }
}

/**
 * The canonical text of each command decoded here, so that its digest does not render it again: every member that
 * applies an entry decodes it, then digests its command. Only commands built by the decoder are kept, and the
 * decoder freezes them (deeply), so the text stays theirs; a caller's own command is rendered afresh each time.
 */
const decodedCommandTexts = new WeakMap<ControlCommand, string>();

/**
 * The canonical JSON of the envelope — the same text as `canonicalJson` of the object `{ v, key, ackFloor, proposer,
 * cmd: commandJson(cmd) }` — put together from its members in sorted order around the command's own text.
 */
function envelopeText(e: ControlEnvelope, decoded = false): string {
  const key = e.key === null ? null : { client: e.key.client, seq: e.key.seq };
  const cmdJson = commandJson(e.cmd);
  const cmd = canonicalJson(cmdJson);
  if (decoded) decodedCommandTexts.set(e.cmd, cmd);
  // members in sorted order (ackFloor, cmd, key, proposer, settings, v); a member whose value is undefined is left out, as
  // canonicalJson leaves it out
  let out = "{";
  if (e.ackFloor !== undefined) out += `"ackFloor":${canonicalJson(e.ackFloor)},`;
  // an unknown op has no JSON value (commandJson gives undefined): left out, as canonicalJson leaves it out
  if (cmdJson !== undefined) out += `"cmd":${cmd},`;
  out += `"key":${canonicalJson(key)}`;
  if (e.proposer !== undefined) out += `,"proposer":${canonicalJson(e.proposer)}`;
  if (e.settings !== undefined) out += `,"settings":${settingsText(e.settings)}`;
  if (e.v !== undefined) out += `,"v":${canonicalJson(e.v)}`;
  return out + "}";
}

/**
 * Every entry of a log carries the same settings: decoding keeps the last ones seen and hands that frozen object out
 * again when a decoded value equals it, so its canonical text (for the re-encoding check) is built once, not per entry.
 */
let lastSettings: ControlSettings | null = null;
function internSettings(s: ControlSettings): ControlSettings {
  const l = lastSettings;
  const same = (a: ListDigest | null, b: ListDigest | null) => (a === null || b === null ? a === b : a.keys === b.keys && a.sha256 === b.sha256);
  if (
    l !== null &&
    l.root === s.root &&
    l.idempotencyWindow === s.idempotencyWindow &&
    l["claims.maxPerHolder"] === s["claims.maxPerHolder"] &&
    same(l["claims.capacity"], s["claims.capacity"]) &&
    same(l["claims.roster"], s["claims.roster"])
  ) {
    return l;
  }
  return (lastSettings = deepFreeze(s));
}

/** The canonical JSON text of a settings value, once per value: a member proposes every entry with the same one. */
const settingsTexts = new WeakMap<ControlSettings, string>();
function settingsText(s: ControlSettings): string {
  let t = settingsTexts.get(s);
  if (t === undefined) settingsTexts.set(s, (t = canonicalJson(settingsJson(s))));
  return t;
}

/**
 * The entry bytes of an envelope: magic, version byte (`e.v`), canonical JSON. Throws `RangeError` when `v` and
 * `settings` disagree (version 2 exactly when settings are carried): such bytes would not decode.
 */
export function encodeEnvelope(e: ControlEnvelope): Uint8Array {
  if (e.v !== 1 && e.v !== 2) throw new RangeError(`envelope v must be 1 or 2, got ${String(e.v)}`);
  if ((e.v === 2) !== (e.settings !== undefined)) throw new RangeError(`envelope v ${e.v}: version 2 carries settings, version 1 none`);
  const body = encoder.encode(envelopeText(e));
  const out = new Uint8Array(CONTROL_MAGIC.length + 1 + body.length);
  out.set(CONTROL_MAGIC, 0);
  out[CONTROL_MAGIC.length] = e.v;
  out.set(body, CONTROL_MAGIC.length + 1);
  return out;
}

/**
 * First 16 bytes of SHA-256 over the canonical JSON of `cmd`, as 32 hex digits (governed.md §3.1) — with one
 * exception: a retire's witness is left out. The witness is the proposer's evidence, read from its own gossip view
 * (§3.6), not part of the act: a client that retries a retire under the same key through another peer (its first
 * peer died with the call in flight) sends the same act with another witness, and must get the recorded outcome,
 * not `keyReuse`. The crash trials found it (issue 17): a retired edge's retry was refused as keyReuse.
 */
export function digestOf(cmd: ControlCommand): string {
  const text = cmd.op === "retire" ? canonicalJson({ edge: cmd.edge, op: cmd.op }) : (decodedCommandTexts.get(cmd) ?? canonicalJson(commandJson(cmd)));
  return hash("sha256", text, "hex").slice(0, 32);
}

// ------------------------------------------------------------------------------------------------ decoding

class Malformed extends Error {}

function fail(why: string): never {
  throw new Malformed(why);
}

type Obj = Record<string, unknown>;

function object(v: unknown, what: string, keys: readonly string[], optional: readonly string[] = []): Obj {
  if (typeof v !== "object" || v === null || Array.isArray(v)) fail(`${what} must be an object`);
  const o = v as Obj;
  for (const k of Object.keys(o)) if (!keys.includes(k) && !optional.includes(k)) fail(`${what} has an unknown field ${JSON.stringify(k)}`);
  for (const k of keys) if (!(k in o)) fail(`${what} lacks ${JSON.stringify(k)}`);
  return o;
}

function str(v: unknown, what: string): string {
  if (typeof v !== "string") fail(`${what} must be a string`);
  return v;
}

function id(v: unknown, what: string): string {
  const s = str(v, what);
  if (s.length === 0 || !s.isWellFormed()) fail(`${what} must be a non-empty, well-formed id`);
  return s;
}

function safeInt(v: unknown, what: string, min: number): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min) fail(`${what} must be a safe integer ≥ ${min}`);
  return v;
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;

function units(v: unknown, what: string, min: bigint): bigint {
  if (typeof v !== "string" || !DECIMAL.test(v)) fail(`${what} must be a canonical decimal string`);
  const x = BigInt(v);
  if (x < min || x > MAX) fail(`${what} must lie in ${min} … 2^63 − 1`);
  return x;
}

function record(v: unknown): AttachmentRecord {
  const o = object(v, "record", ["id", "parent", "child", "weight"]);
  const w = object(o.weight, "record.weight", ["num", "den"]);
  return {
    id: AttachmentId(id(o.id, "record.id")),
    parent: GroupId(id(o.parent, "record.parent")),
    child: GroupId(id(o.child, "record.child")),
    weight: Weight.of(units(w.num, "weight.num", 1n), units(w.den, "weight.den", 1n)),
  };
}

function take(v: unknown): TakeRequest {
  const o = object(v, "request", ["holder", "resources"], ["scope", "ttlMs", "label"]);
  if (!Array.isArray(o.resources)) fail("request.resources must be an array");
  const resources = o.resources.map((x: unknown) => {
    const r = object(x, "resource", ["key", "mode"]);
    if (r.mode !== "exclusive" && r.mode !== "shared") fail("resource.mode must be 'exclusive' or 'shared'");
    return { key: str(r.key, "resource.key"), mode: r.mode as ClaimMode };
  });
  const req: { -readonly [K in keyof TakeRequest]: TakeRequest[K] } = { holder: str(o.holder, "request.holder"), resources };
  if (o.scope !== undefined) req.scope = str(o.scope, "request.scope");
  if (o.ttlMs !== undefined) req.ttlMs = safeInt(o.ttlMs, "request.ttlMs", Number.MIN_SAFE_INTEGER);
  if (o.label !== undefined) req.label = str(o.label, "request.label");
  return req;
}

function command(v: unknown): ControlCommand {
  if (typeof v !== "object" || v === null) fail("cmd must be an object");
  const op = (v as Obj).op;
  switch (op) {
    case "mint": {
      const o = object(v, op, ["op", "holder", "amount"]);
      return { op, holder: ReplicaId(id(o.holder, "holder")), amount: units(o.amount, "amount", 1n) };
    }
    case "prepare":
      return { op, record: record(object(v, op, ["op", "record"]).record) };
    case "activate":
    case "close":
      return { op, edge: AttachmentId(id(object(v, op, ["op", "edge"]).edge, "edge")) };
    case "retire": {
      const o = object(v, op, ["op", "edge"], ["witness"]);
      const edge = AttachmentId(id(o.edge, "edge"));
      return o.witness === undefined ? { op, edge } : { op, edge, witness: str(o.witness, "witness") };
    }
    case "enroll":
    case "depart":
      return { op, replica: ReplicaId(id(object(v, op, ["op", "replica"]).replica, "replica")) };
    case "barrier":
      object(v, op, ["op"]);
      return { op };
    case "claims.take":
      return { op, request: take(object(v, op, ["op", "request"]).request) };
    case "claims.release": {
      const o = object(v, op, ["op", "holder", "key"], ["token"]);
      const holder = str(o.holder, "holder");
      const key = str(o.key, "key");
      return o.token === undefined ? { op, holder, key } : { op, holder, key, token: safeInt(o.token, "token", 0) };
    }
    case "claims.renew": {
      const o = object(v, op, ["op", "holder", "key"]);
      return { op, holder: str(o.holder, "holder"), key: str(o.key, "key") };
    }
    case "claims.releaseAll":
      return { op, holder: str(object(v, op, ["op", "holder"]).holder, "holder") };
    case "claims.releaseScope":
      return { op, scope: str(object(v, op, ["op", "scope"]).scope, "scope") };
    default:
      return fail(`unknown op ${JSON.stringify(op)}`);
  }
}

/** Freezes `v` and the plain objects and arrays under it (class instances such as `Weight` are left as they are). */
function deepFreeze<T>(v: T): T {
  if (typeof v !== "object" || v === null || Object.isFrozen(v)) return v;
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== Array.prototype) return v;
  for (const x of Object.values(v)) deepFreeze(x);
  return Object.freeze(v);
}

/** Version 1, and version 2 (version 1 plus `settings`): the body after the version byte. */
function envelopeOf(version: 1 | 2, text: string): ControlEnvelope {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    fail("body is not JSON");
  }
  const o = object(doc, "envelope", version === 1 ? ["v", "key", "ackFloor", "proposer", "cmd"] : ["v", "key", "ackFloor", "proposer", "cmd", "settings"]);
  if (o.v !== version) fail(`envelope v is ${JSON.stringify(o.v)}, the version byte says ${version}`);
  let key: ProposalKey | null = null;
  if (o.key !== null) {
    const k = object(o.key, "key", ["client", "seq"]);
    key = { client: id(k.client, "key.client"), seq: safeInt(k.seq, "key.seq", 1) };
  }
  // frozen: the decoder keeps the command's canonical text for its digest, which must stay the command's own
  const cmd = deepFreeze(command(o.cmd));
  if ((key === null) !== (cmd.op === "barrier")) fail(cmd.op === "barrier" ? "a barrier carries no key" : `a ${cmd.op} needs a key`);
  const ackFloor = safeInt(o.ackFloor, "ackFloor", 0);
  if (key === null && ackFloor !== 0) fail("a keyless entry has ackFloor 0");
  let settings: ControlSettings | undefined;
  if (version === 2) {
    try {
      settings = internSettings(settingsFromJson(o.settings));
    } catch (e) {
      fail((e as Error).message);
    }
  }
  const proposer = ReplicaId(id(o.proposer, "proposer"));
  const env: ControlEnvelope = settings === undefined ? { v: 1, key, ackFloor, proposer, cmd } : { v: 2, key, ackFloor, proposer, cmd, settings };
  if (envelopeText(env, true) !== text) fail("body is not the canonical encoding of its envelope");
  return env;
}

/**
 * Classifies and decodes entry bytes: `foreign` without the magic, `control` for exactly one canonical envelope of a
 * known version, `malformed` (with the reason) for anything else that carries the magic. Never throws.
 */
export function decodeEntry(bytes: Uint8Array): DecodedEntry {
  if (bytes.length < CONTROL_MAGIC.length) return { kind: "foreign" };
  for (let i = 0; i < CONTROL_MAGIC.length; i++) if (bytes[i] !== CONTROL_MAGIC[i]) return { kind: "foreign" };
  if (bytes.length === CONTROL_MAGIC.length) return { kind: "malformed", why: "no version byte after the magic" };
  const version = bytes[CONTROL_MAGIC.length]!;
  if (version !== 1 && version !== 2) return { kind: "malformed", why: `unknown envelope version ${version}` };
  let text: string;
  try {
    text = decoder.decode(bytes.subarray(CONTROL_MAGIC.length + 1));
  } catch {
    return { kind: "malformed", why: "body is not UTF-8" };
  }
  try {
    return { kind: "control", envelope: envelopeOf(version, text) };
  } catch (e) {
    if (e instanceof Malformed || e instanceof RangeError || e instanceof TypeError) return { kind: "malformed", why: e.message };
    throw e;
  }
}
