/** Errors of the governed control plane (governed.md §2.2). Each carries the `ProposalKey` when one was allocated. */
import { NodeShutdownError } from "../raft/errors.ts";
import type { LogIndex, ProposalKey } from "../raft/types.ts";

/**
 * The call's outcome is not known: it timed out, was aborted, or every propose attempt failed. The act may still
 * commit later. Retry with the same `{ key }` to apply it at most once (a retry without the key is a new act).
 */
export class OutcomeUnknownError extends Error {
  override readonly name = "OutcomeUnknownError";
  /** The key to retry with (`null` only for `sync()`, which proposes no keyed act). */
  readonly key: ProposalKey | null;
  constructor(message: string, key: ProposalKey | null, options?: { cause?: unknown }) {
    super(message, options);
    this.key = key;
  }
}

/**
 * This process's auto client id (`auto:${self}:${incarnation}`) already appears in the applied session table with
 * a sequence number this process never issued: the incarnation was reused, so new acts would be answered with old
 * acts' outcomes. Start the process with a fresh incarnation (e.g. `crypto.randomUUID()`).
 */
export class IncarnationReusedError extends Error {
  override readonly name = "IncarnationReusedError";
  readonly key: ProposalKey | null;
  constructor(message: string, key: ProposalKey | null = null) {
    super(message);
    this.key = key;
  }
}

/**
 * The apply loop stopped at `index` and will not go on (fail closed): a tagged entry that does not decode, an
 * invariant broken while applying, or a snapshot that cannot be restored. Skipping would silently drop a control
 * act while the applied index marched on. Every pending and later control call rejects with this error.
 */
export class ControlPlaneHaltedError extends Error {
  override readonly name = "ControlPlaneHaltedError";
  readonly index: LogIndex;
  readonly key: ProposalKey | null;
  constructor(index: LogIndex, cause: unknown, key: ProposalKey | null = null) {
    super(`control plane halted at index ${index}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.index = index;
    this.key = key;
  }
}

/**
 * The `NodeShutdownError` a control call rejects with when `shutdown()` ran, carrying the call's key (§2.2: every error
 * carries the key when one was allocated) — after a restart, `outcomeOf(key)` says whether the act landed.
 */
export function shutdownError(key: ProposalKey | null): NodeShutdownError & { readonly key: ProposalKey | null } {
  return Object.assign(new NodeShutdownError("the governed node was shut down; the act may still commit"), { key });
}
