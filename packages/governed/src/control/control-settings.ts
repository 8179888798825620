/**
 * The decision-affecting settings of a control log (governed.md §3.5: "the construction constants `root` and `claims`
 * options, identical on every peer", plus the `idempotencyWindow` extension), in one canonical form that is fixed in
 * the log and carried in snapshots. Each peer takes these from its own configuration; a peer whose values differ
 * would apply the same committed log to a different state without any error (a capacity line lost on one peer: one
 * shared take granted there, refused elsewhere — two workers each believing they hold the mutex). So the first
 * control entry that carries settings fixes them for the life of the log, and a member whose own settings differ
 * halts before it decides anything under them (`ControlState`).
 *
 * The canonical form spells defaults one way (an absent window is `DEFAULT_IDEMPOTENCY_WINDOW`, a capacity of 1 is
 * an unlisted key's, no claims options is `{}`, roster keys are trimmed as the claims table trims them), so equal
 * settings written differently compare equal. The roster and the capacity map can be large (up to a million keys),
 * so the log carries their key count and SHA-256 prefix, not the keys: bounded bytes per entry, and still enough to
 * name which setting differs.
 */
import { hash } from "node:crypto";
import { createClaims } from "@heddle/claims";
import type { ClaimsOptions } from "@heddle/claims";
import { GroupId, ReplicaId } from "@heddle/ledger";
import type { LogIndex } from "../raft/types.ts";
import { canonicalJson } from "./canonical-json.ts";
import type { Canonical } from "./canonical-json.ts";

/** The settings that decide outcomes of applying the control log, by their `GovernedOptions` names. */
export const CONTROL_SETTING_NAMES = ["claims.capacity", "claims.maxPerHolder", "claims.roster", "idempotencyWindow", "root"] as const;

/** One decision-affecting setting, named as its `GovernedOptions` field. */
export type ControlSettingName = (typeof CONTROL_SETTING_NAMES)[number];

/** A large list setting as the log holds it: how many keys, and the first 16 bytes of SHA-256 of their canonical JSON. */
export interface ListDigest {
  readonly keys: number;
  readonly sha256: string;
}

/** The canonical decision-affecting settings (what the log fixes and a snapshot carries). */
export interface ControlSettings {
  readonly "claims.capacity": ListDigest;
  readonly "claims.maxPerHolder": number | null;
  /** `null`: no roster (any key may be taken); a roster of no keys refuses every key. */
  readonly "claims.roster": ListDigest | null;
  readonly idempotencyWindow: number;
  readonly root: GroupId;
}

/** The settings fixed in a log: their values, and the entry that fixed them (its index and proposer). */
export interface FixedSettings {
  readonly settings: ControlSettings;
  readonly fixedAt: LogIndex;
  readonly fixedBy: ReplicaId;
}

/** One setting on which a member and its log differ. */
export interface SettingDifference {
  readonly setting: ControlSettingName;
  /** The value the log fixed, in its canonical form. */
  readonly log: ControlSettings[ControlSettingName];
  /** This member's value, in the same form. */
  readonly local: ControlSettings[ControlSettingName];
}

/**
 * This member's decision-affecting settings differ from those its control log fixed (at `fixedAt`, by `fixedBy`),
 * or from those a snapshot it was handed was made under. It never applies the log under them: its control plane
 * halts (`ControlPlaneHaltedError`, with this as the cause). Set each setting in `differences` to the cluster's value
 * and restart the member; settings are fixed for the life of the log.
 */
export class SettingsMismatchError extends Error {
  override readonly name = "SettingsMismatchError";
  readonly differences: readonly SettingDifference[];
  readonly fixedAt: LogIndex;
  readonly fixedBy: ReplicaId;
  readonly #where: string;
  constructor(where: string, fixed: FixedSettings, differences: readonly SettingDifference[]) {
    super(explain(where, fixed, differences, (s) => s));
    this.#where = where;
    this.differences = differences;
    this.fixedAt = fixed.fixedAt;
    this.fixedBy = fixed.fixedBy;
  }

  /**
   * The message with each setting named by `name` (e.g. the key of a config file that sets it), for a shell that
   * configures the settings under other names than `GovernedOptions`'.
   */
  explain(name: (setting: ControlSettingName) => string): string {
    return explain(this.#where, { fixedAt: this.fixedAt, fixedBy: this.fixedBy }, this.differences, name);
  }
}

function explain(where: string, fixed: { fixedAt: LogIndex; fixedBy: ReplicaId }, differences: readonly SettingDifference[], name: (s: ControlSettingName) => string): string {
  const list = differences.map((d) => `${name(d.setting)} — the log's is ${describe(d.log)}, this member's is ${describe(d.local)}`).join("; ");
  return (
    `this member's settings differ from ${where} (fixed at index ${fixed.fixedAt} by ${fixed.fixedBy}): ${list}. ` +
    `Every member re-decides the log with these settings, so they must be equal on every peer for the life of the log: set ${differences.map((d) => name(d.setting)).join(", ")} to the cluster's value and restart this member`
  );
}

function describe(v: ControlSettings[ControlSettingName]): string {
  if (v === null) return "unset";
  if (typeof v === "object") return v.keys === 0 ? "empty (0 keys)" : `${v.keys} key${v.keys === 1 ? "" : "s"} (sha256 ${v.sha256})`;
  return JSON.stringify(v);
}

const listDigest = (list: Canonical[]): ListDigest => ({ keys: list.length, sha256: hash("sha256", canonicalJson(list), "hex").slice(0, 32) });

/** Validated claims options in their canonical spelling, and the table options built from it. */
export interface CanonicalClaims {
  readonly roster: readonly string[] | null;
  /** `[key, capacity]` in code-unit order of the keys, without capacity-1 entries (an unlisted key has capacity 1). */
  readonly capacity: readonly (readonly [string, number | null])[];
  readonly maxPerHolder: number | null;
  /** The options to build the table from: every member that agrees builds a table with the same encoding. */
  readonly options: ClaimsOptions;
}

/**
 * The canonical spelling of claims options, read back from the encoding of an empty table built with them (the
 * claims package owns the key trimming and order). Throws `RangeError` on a bad option, as `createClaims` does.
 */
export function canonicalClaims(options: ClaimsOptions): CanonicalClaims {
  return canonicalClaimsOfTable(JSON.parse(createClaims(options).encode()) as Record<string, unknown>);
}

/** The canonical claims options of a decoded claims-table encoding (its `roster`, `capacity`, `maxPerHolder`). */
export function canonicalClaimsOfTable(doc: Record<string, unknown>): CanonicalClaims {
  const roster = Array.isArray(doc.roster) ? (doc.roster as string[]) : null;
  const pairs = Array.isArray(doc.capacity) ? (doc.capacity as [string, number | null][]) : [];
  const capacity = pairs.filter(([, cap]) => cap !== 1).map(([k, cap]) => [k, cap] as const);
  const maxPerHolder = typeof doc.maxPerHolder === "number" ? doc.maxPerHolder : null;
  const options: { -readonly [K in keyof ClaimsOptions]: ClaimsOptions[K] } = {};
  if (roster !== null) options.roster = roster;
  if (capacity.length > 0) options.capacity = Object.fromEntries(capacity);
  if (maxPerHolder !== null) options.maxPerHolder = maxPerHolder;
  return { roster, capacity, maxPerHolder, options };
}

/** The canonical settings of a member: its root, its canonical claims options and its window. */
export function controlSettings(root: GroupId, claims: CanonicalClaims, idempotencyWindow: number): ControlSettings {
  return {
    "claims.capacity": listDigest(claims.capacity.map(([k, cap]) => [k, cap])),
    "claims.maxPerHolder": claims.maxPerHolder,
    "claims.roster": claims.roster === null ? null : listDigest([...claims.roster]),
    idempotencyWindow,
    root,
  };
}

/** The canonical JSON value of settings (keys in code-unit order; what entries and snapshots carry). */
export function settingsJson(s: ControlSettings): Canonical {
  const list = (d: ListDigest | null): Canonical => (d === null ? null : { keys: d.keys, sha256: d.sha256 });
  return {
    "claims.capacity": list(s["claims.capacity"]),
    "claims.maxPerHolder": s["claims.maxPerHolder"],
    "claims.roster": list(s["claims.roster"]),
    idempotencyWindow: s.idempotencyWindow,
    root: s.root,
  };
}

/** The first 16 bytes of SHA-256 over the canonical JSON of `s`, as 32 hex digits: one value to compare and show. */
export function settingsDigest(s: ControlSettings): string {
  return hash("sha256", canonicalJson(settingsJson(s)), "hex").slice(0, 32);
}

/** The settings on which `log` and `local` differ, in `CONTROL_SETTING_NAMES` order; empty when equal. */
export function settingsDifferences(log: ControlSettings, local: ControlSettings): SettingDifference[] {
  const out: SettingDifference[] = [];
  for (const setting of CONTROL_SETTING_NAMES) {
    const a = log[setting];
    const b = local[setting];
    const same = a === null || b === null || typeof a !== "object" || typeof b !== "object" ? a === b : a.keys === b.keys && a.sha256 === b.sha256;
    if (!same) out.push({ setting, log: a, local: b });
  }
  return out;
}

/** Settings that do not decode: `why` says which part. */
export class SettingsDecodeError extends Error {
  override readonly name = "SettingsDecodeError";
}

const HEX32 = /^[0-9a-f]{32}$/;

/** Decodes the canonical JSON value of settings (from an entry or a snapshot); throws `SettingsDecodeError`. */
export function settingsFromJson(v: unknown): ControlSettings {
  const bad = (why: string): never => {
    throw new SettingsDecodeError(`settings: ${why}`);
  };
  if (typeof v !== "object" || v === null || Array.isArray(v)) return bad("must be an object");
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  for (const k of keys) if (!(CONTROL_SETTING_NAMES as readonly string[]).includes(k)) bad(`unknown setting ${JSON.stringify(k)}`);
  for (const k of CONTROL_SETTING_NAMES) if (!(k in o)) bad(`lacks ${JSON.stringify(k)}`);
  const int = (x: unknown, what: string, min: number): number => (typeof x === "number" && Number.isSafeInteger(x) && x >= min ? x : bad(`${what} must be a safe integer ≥ ${min}`));
  const list = (x: unknown, what: string): ListDigest => {
    if (typeof x !== "object" || x === null || Array.isArray(x)) return bad(`${what} must be {keys, sha256}`);
    const d = x as Record<string, unknown>;
    if (Object.keys(d).length !== 2 || typeof d.sha256 !== "string" || !HEX32.test(d.sha256)) return bad(`${what} must be {keys, sha256} with 32 lowercase hex digits`);
    return { keys: int(d.keys, `${what}.keys`, 0), sha256: d.sha256 };
  };
  const root = o.root;
  if (typeof root !== "string" || root.length === 0 || !root.isWellFormed()) bad("root must be a non-empty, well-formed id");
  return {
    "claims.capacity": list(o["claims.capacity"], "claims.capacity"),
    "claims.maxPerHolder": o["claims.maxPerHolder"] === null ? null : int(o["claims.maxPerHolder"], "claims.maxPerHolder", 1),
    "claims.roster": o["claims.roster"] === null ? null : list(o["claims.roster"], "claims.roster"),
    idempotencyWindow: int(o.idempotencyWindow, "idempotencyWindow", 1),
    root: GroupId(root as string),
  };
}

/** `FixedSettings` as a snapshot carries it. */
export function fixedSettingsJson(f: FixedSettings): Canonical {
  return { fixedAt: f.fixedAt, fixedBy: f.fixedBy, values: settingsJson(f.settings) };
}

/** Decodes `fixedSettingsJson`; throws `SettingsDecodeError`. */
export function fixedSettingsFromJson(v: unknown): FixedSettings {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new SettingsDecodeError("settings: the fixed settings must be an object");
  const o = v as Record<string, unknown>;
  if (Object.keys(o).length !== 3) throw new SettingsDecodeError("settings: the fixed settings must be {fixedAt, fixedBy, values}");
  if (typeof o.fixedAt !== "number" || !Number.isSafeInteger(o.fixedAt) || o.fixedAt < 1) throw new SettingsDecodeError("settings: fixedAt must be a safe integer ≥ 1");
  if (typeof o.fixedBy !== "string" || o.fixedBy.length === 0 || !o.fixedBy.isWellFormed()) throw new SettingsDecodeError("settings: fixedBy must be a non-empty, well-formed id");
  return { fixedAt: o.fixedAt, fixedBy: ReplicaId(o.fixedBy), settings: settingsFromJson(o.values) };
}
