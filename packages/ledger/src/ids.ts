declare const brand: unique symbol;
type Branded<T extends string> = string & { readonly [brand]: T };

/** A node of the fairness tree. */
export type GroupId = Branded<"GroupId">;
/** An immutable parent→child edge (one generation). */
export type AttachmentId = Branded<"AttachmentId">;
/** The key of one mint act. */
export type MintId = Branded<"MintId">;
/** A peer holding a copy of the ledger and authoring its own slots. */
export type ReplicaId = Branded<"ReplicaId">;
/** The storage key of transfer rows: `""` for the root path, else the final edge id. */
export type PathKey = Branded<"PathKey">;

/** True iff `s` is a non-empty, well-formed UTF-16 string (ledger.md §2.2). */
export function isValidId(s: unknown): s is string {
  return typeof s === "string" && s.length > 0 && s.isWellFormed();
}

function idConstructor<T extends string>(kind: string): (s: string) => T {
  return (s: string): T => {
    if (typeof s !== "string") throw new TypeError(`${kind} must be a string, got ${typeof s}`);
    if (!isValidId(s)) throw new RangeError(`${kind} must be a non-empty, well-formed UTF-16 string`);
    return s as T;
  };
}

/** Brands a string as a {@link GroupId}; throws on an empty or ill-formed string. */
export const GroupId: (s: string) => GroupId = idConstructor<GroupId>("GroupId");
/** Brands a string as an {@link AttachmentId}; throws on an empty or ill-formed string. */
export const AttachmentId: (s: string) => AttachmentId = idConstructor<AttachmentId>("AttachmentId");
/** Brands a string as a {@link MintId}; throws on an empty or ill-formed string. */
export const MintId: (s: string) => MintId = idConstructor<MintId>("MintId");
/** Brands a string as a {@link ReplicaId}; throws on an empty or ill-formed string. */
export const ReplicaId: (s: string) => ReplicaId = idConstructor<ReplicaId>("ReplicaId");

/** Path keys: `ROOT` (`""`) names the root path; `of(e)` is the edge id itself. */
export const PathKey: { readonly ROOT: PathKey; of(edge: AttachmentId): PathKey } = Object.freeze({
  ROOT: "" as PathKey,
  of(edge: AttachmentId): PathKey {
    return edge as string as PathKey;
  },
});

/** UTF-16 code-unit order (JS `<`), never locale order (ledger.md §2.2). */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
