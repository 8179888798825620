// The one schema toolkit of the daemon: the config file and every API body are TypeBox schemas,
// checked by TypeBox's compiled validator, and every failure is reported as a field name plus what is
// wrong with it. The same schemas feed the OpenAPI description, so what is documented is what is checked.
import { Type, type TObject, type TProperties, type TSchema, type Static } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { ValueErrorType, type ValueError } from "@sinclair/typebox/errors";

/** One problem found in a document: the field (dotted path, `roster[0].id`; `(document)` for the whole) and what is wrong. */
export interface FieldIssue {
  readonly field: string;
  readonly problem: string;
}

/** Largest signed 64-bit integer: every amount of service units must fit (ledger.md §2.1). */
export const INT64_MAX = (1n << 63n) - 1n;

const AMOUNT_EXPECTED = "an integer amount of service units: a JSON number up to 2^53 or a decimal string up to 2^63 − 1";

/** An object schema that refuses keys it does not list (so a misspelt key is reported, not ignored). */
export function Obj<T extends TProperties>(properties: T, options: { description?: string; title?: string } = {}): TObject<T> {
  return Type.Object(properties, { ...options, additionalProperties: false });
}

/**
 * A non-negative amount of service units: a decimal string (any size up to 2^63 − 1) or a JSON integer
 * (safe range). Parsed with {@link amountOf}.
 */
export function Amount(description: string, options: { minimum?: 0 | 1 } = {}) {
  const min = options.minimum ?? 0;
  return Type.Union(
    [
      Type.String({ pattern: min === 1 ? "^[1-9][0-9]{0,18}$" : "^(0|[1-9][0-9]{0,18})$" }),
      Type.Integer({ minimum: min, maximum: Number.MAX_SAFE_INTEGER }),
    ],
    { description, "x-expected": min === 1 ? `a positive ${AMOUNT_EXPECTED.slice(3)}` : AMOUNT_EXPECTED },
  );
}

/** A wire amount (validated by {@link Amount}) as a `bigint`; `null` above 2^63 − 1. */
export function amountOf(v: string | number): bigint | null {
  const b = BigInt(v);
  return b > INT64_MAX ? null : b;
}

/** A non-empty identifier string of at most `max` characters (group, edge, replica, claim key …). */
export function Id(description: string, max = 256) {
  return Type.String({ minLength: 1, maxLength: max, description });
}

/** A weight: a positive integer (`3`) or a positive fraction (`"3/2"`). */
export function WeightText(description: string) {
  return Type.Union([Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), Type.String({ pattern: "^[1-9][0-9]{0,18}(/[1-9][0-9]{0,18})?$" })], {
    description,
    "x-expected": 'a positive weight: an integer such as 3, or a fraction such as "3/2"',
  });
}

/** A compiled validator for one schema. */
export interface Checker<T extends TSchema> {
  readonly schema: T;
  /** The value typed, or every problem found (first per field). */
  check(value: unknown): { ok: true; value: Static<T> } | { ok: false; issues: FieldIssue[] };
}

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** Compiles `schema` once (cached) and returns a checker that names fields in its issues. */
export function checker<T extends TSchema>(schema: T): Checker<T> {
  let c = compiled.get(schema);
  if (c === undefined) {
    c = TypeCompiler.Compile(schema);
    compiled.set(schema, c);
  }
  const tc = c as TypeCheck<T>;
  return {
    schema,
    check(value) {
      if (tc.Check(value)) {
        const bad = allWellFormed(value) ? [] : illFormedStrings(value, "");
        return bad.length === 0 ? { ok: true, value: value as Static<T> } : { ok: false, issues: bad };
      }
      return { ok: false, issues: issuesOf(tc.Errors(value)) };
    },
  };
}

/**
 * Whether every string in `value`, keys included, is well-formed UTF-16 — the check of {@link illFormedStrings}
 * without the field paths, which it builds for every member and which only a refusal needs (on every API request
 * with a body, it showed in the leader's profile under 64 claims clients).
 */
function allWellFormed(value: unknown): boolean {
  if (typeof value === "string") return value.isWellFormed();
  if (Array.isArray(value)) {
    for (const v of value) if (!allWellFormed(v)) return false;
    return true;
  }
  if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) if (!k.isWellFormed() || !allWellFormed(v)) return false;
  }
  return true;
}

/**
 * Every string in `value` (keys included) that is not well-formed UTF-16: JSON can carry a lone surrogate
 * (`"\\ud800"`), which no identifier may hold (ledger ids refuse it) and which cannot be stored or echoed
 * faithfully, so it is refused here with the field named rather than failing deeper down.
 */
function illFormedStrings(value: unknown, path: string, out: FieldIssue[] = []): FieldIssue[] {
  if (typeof value === "string") {
    if (!value.isWellFormed()) out.push({ field: fieldName(path), problem: "is not well-formed Unicode (it holds a lone UTF-16 surrogate)" });
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => illFormedStrings(v, `${path}/${i}`, out));
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const p = `${path}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`;
      if (!k.isWellFormed()) out.push({ field: fieldName(p), problem: "is a key that is not well-formed Unicode (it holds a lone UTF-16 surrogate)" });
      illFormedStrings(v, p, out);
    }
  }
  return out;
}

/** Renders a TypeBox error path (`/roster/0/id`) as `roster[0].id`. */
export function fieldName(path: string): string {
  if (path === "") return "(document)";
  let out = "";
  for (const raw of path.slice(1).split("/")) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (/^[0-9]+$/.test(seg)) out += `[${seg}]`;
    else out += out === "" ? seg : `.${seg}`;
  }
  return out;
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === "number") return Number.isInteger(v) ? `the integer ${v}` : `the number ${v}`;
  return `${typeof v} ${String(v)}`;
}

function expectedOf(schema: TSchema): string {
  const x = (schema as { "x-expected"?: string })["x-expected"];
  if (x !== undefined) return x;
  const s = schema as { type?: string; enum?: unknown[]; const?: unknown; anyOf?: TSchema[] };
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.anyOf !== undefined) {
    const consts = s.anyOf.map((a) => (a as { const?: unknown }).const);
    if (consts.every((k) => k !== undefined)) return `one of ${consts.map((k) => JSON.stringify(k)).join(", ")}`;
    return s.anyOf.map(expectedOf).join(" or ");
  }
  switch (s.type) {
    case "string":
      return "a string";
    case "integer":
      return "an integer";
    case "number":
      return "a number";
    case "boolean":
      return "true or false";
    case "array":
      return "an array";
    case "object":
      return "an object";
    default:
      return "a valid value";
  }
}

function problemOf(e: ValueError): string {
  const s = e.schema as Record<string, unknown>;
  const x = s["x-expected"] as string | undefined;
  switch (e.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return "is missing (required)";
    case ValueErrorType.ObjectAdditionalProperties: {
      const known = Object.keys((s["properties"] as object | undefined) ?? {});
      return `is not a known key${known.length > 0 ? ` (known keys here: ${known.join(", ")})` : ""}`;
    }
    case ValueErrorType.String:
    case ValueErrorType.Integer:
    case ValueErrorType.Number:
    case ValueErrorType.Boolean:
    case ValueErrorType.Array:
    case ValueErrorType.Object:
    case ValueErrorType.Union:
    case ValueErrorType.Literal:
      return `has the wrong type: expected ${expectedOf(e.schema)}, got ${kindOf(e.value)}`;
    case ValueErrorType.StringPattern:
    case ValueErrorType.StringFormat:
      return `is malformed: expected ${x ?? `a string matching ${String(s["pattern"])}`}, got ${kindOf(e.value)}`;
    case ValueErrorType.StringMinLength:
      return s["minLength"] === 1 ? "must not be empty" : `must be at least ${String(s["minLength"])} characters long`;
    case ValueErrorType.StringMaxLength:
      return `must be at most ${String(s["maxLength"])} characters long`;
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.IntegerMinimum:
      return `must be at least ${String(s["minimum"])}, got ${kindOf(e.value)}`;
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerMaximum:
      return `must be at most ${String(s["maximum"])}, got ${kindOf(e.value)}`;
    case ValueErrorType.ArrayMinItems:
      return `must have at least ${String(s["minItems"])} item(s)`;
    case ValueErrorType.ArrayMaxItems:
      return `must have at most ${String(s["maxItems"])} item(s)`;
    case ValueErrorType.ObjectMaxProperties:
      return `must have at most ${String(s["maxProperties"])} entries`;
    case ValueErrorType.ArrayUniqueItems:
      return "must not repeat an item";
    default:
      return x !== undefined ? `is invalid: expected ${x}` : `is invalid: ${e.message}`;
  }
}

/**
 * The first problem per field, in document order. A union reports only itself (TypeBox also lists each
 * failed branch, which would name the same field several times with conflicting wants).
 */
function issuesOf(errors: Iterable<ValueError>): FieldIssue[] {
  const seen = new Set<string>();
  const out: FieldIssue[] = [];
  for (const e of errors) {
    const field = fieldName(e.path);
    if (seen.has(field)) continue;
    // A field under a failing union whose own report was already taken: skip the branch noise.
    if ([...seen].some((f) => field.startsWith(`${f}.`) || field.startsWith(`${f}[`))) continue;
    seen.add(field);
    out.push({ field, problem: problemOf(e) });
    if (out.length >= 20) break;
  }
  return out;
}

/** Renders issues one per line, `field: problem`. */
export function renderIssues(issues: readonly FieldIssue[]): string {
  return issues.map((i) => `${i.field}: ${i.problem}`).join("\n");
}
