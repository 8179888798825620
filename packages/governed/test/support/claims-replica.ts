/**
 * One replica of the replicated claims table as the claims-on-Raft simulation sees it: the production
 * `ControlState` (governed.md §3.4's claims family, G2) folding committed entries, plus the view the simulation's
 * checks read — what each entry decided, in the shape of the `ClaimsTable` call it made. Nothing here decides
 * anything: entries are encoded with the production envelope and decided by `ControlState.apply`.
 */
import type { ClaimsOptions, ClaimsTable, TakeOutcome, TakeRequest } from "@heddle/claims";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { ControlState, encodeEnvelope, outcomeJson } from "../../src/index.ts";
import type { Committed, LogEntry, ProposalKey } from "../../src/index.ts";
import { canonicalJson } from "../../src/control/canonical-json.ts";

/** One claims command, as a simulation client proposes it. */
export type ClaimsCommand =
  | { readonly op: "take"; readonly request: TakeRequest }
  | { readonly op: "release"; readonly holder: string; readonly key: string }
  | { readonly op: "releaseAll"; readonly holder: string }
  | { readonly op: "releaseScope"; readonly scope: string }
  | { readonly op: "renew"; readonly holder: string; readonly key: string };

/** What applying one command returned: the table call's own answer. */
export type ClaimsResult =
  | { readonly op: "take"; readonly outcome: TakeOutcome }
  | { readonly op: "release" | "renew"; readonly held: boolean }
  | { readonly op: "releaseAll" | "releaseScope"; readonly released: readonly string[] };

/** The production control entry for a claims command under `key` (the envelope of governed.md §3.1). */
export function encodeClaimsEntry(c: ClaimsCommand, key: ProposalKey): Uint8Array {
  const cmd =
    c.op === "take"
      ? { op: "claims.take" as const, request: c.request }
      : c.op === "releaseAll"
        ? { op: "claims.releaseAll" as const, holder: c.holder }
        : c.op === "releaseScope"
          ? { op: "claims.releaseScope" as const, scope: c.scope }
          : { op: `claims.${c.op}` as "claims.release" | "claims.renew", holder: c.holder, key: c.key };
  return encodeEnvelope({ v: 1, key, ackFloor: 0, proposer: ReplicaId("sim"), cmd });
}

/** One applied application entry, as the simulation's checks see it. */
export interface AppliedClaims {
  readonly entry: LogEntry;
  readonly command: ClaimsCommand;
  /** The time the command was applied at: `max(claimsNow, stampedAt)`. */
  readonly now: number;
  readonly result: ClaimsResult;
  /** The recorded outcome, as canonical text (a replayed duplicate returns the first one's). */
  readonly text: string;
  /** `true` when `(client, seq)` had already been decided and nothing changed. */
  readonly duplicate: boolean;
}

/** A claims replica: a production `ControlState` and its applied index. */
export class ClaimsReplica {
  readonly state: ControlState;

  constructor(options: ClaimsOptions) {
    this.state = new ControlState({ root: GroupId("root"), claims: options });
  }

  get table(): ClaimsTable {
    return this.state.claims;
  }

  get applied(): number {
    return this.state.appliedIndex;
  }

  get claimsNow(): number {
    return this.state.claimsNow;
  }

  /** Folds one committed item (it must be the next index; the state halts otherwise). */
  apply(c: Committed): AppliedClaims | null {
    const step = this.state.apply(c);
    if (c.kind !== "entry" || step.envelope === null || step.outcome === null) return null;
    const out = step.outcome;
    if (out.kind !== "applied" || out.claims === undefined) throw new Error(`entry ${step.index}: not a claims outcome: ${JSON.stringify(outcomeJson(out))}`);
    const cmd = step.envelope.cmd;
    const command: ClaimsCommand =
      cmd.op === "claims.take"
        ? { op: "take", request: cmd.request }
        : cmd.op === "claims.release" || cmd.op === "claims.renew"
          ? { op: cmd.op === "claims.release" ? "release" : "renew", holder: cmd.holder, key: cmd.key }
          : cmd.op === "claims.releaseAll"
            ? { op: "releaseAll", holder: cmd.holder }
            : cmd.op === "claims.releaseScope"
              ? { op: "releaseScope", scope: cmd.scope }
              : (() => {
                  throw new Error(`entry ${step.index}: ${cmd.op} is not a claims command`);
                })();
    const result: ClaimsResult =
      command.op === "take"
        ? { op: "take", outcome: out.claims as TakeOutcome }
        : command.op === "release" || command.op === "renew"
          ? { op: command.op, held: out.claims as boolean }
          : { op: command.op, released: out.claims as readonly string[] };
    return { entry: c.entry, command, now: this.state.claimsNow, result, text: canonicalJson(outcomeJson(out)), duplicate: !step.decided };
  }

  /** The recorded outcome text of `(client, seq)`, if decided and not pruned. */
  outcome(client: string, seq: number): string | undefined {
    const o = this.state.outcomeOf({ client, seq });
    return typeof o === "string" ? undefined : canonicalJson(outcomeJson(o));
  }

  /** The canonical text of the whole replica state. */
  stateText(): string {
    return this.state.stateText();
  }
}
