// The daemon's log lines for its node's events: what the operator must act on (a store that cannot commit, a bug
// the node caught), what changes the cluster (peers joining and leaving) and what needs a look (ledger conflicts).
import type { NodeEvent } from "@heddle/node";
import type { Logger } from "./log.ts";

/**
 * Logs `e` if the operator should see it. `store` names the ledger store in a commit failure. An `internal-error`
 * (the node reports the first per stream; the `heddle_*_subscriber_errors_total` metrics count every one) is
 * logged as an error with where it was caught and the stack, so the counters point at a line to report.
 */
export function logNodeEvent(logger: Logger, e: NodeEvent, store: string): void {
  if (e.kind === "persist-failed") logger.error("store commit failed: the node has failed closed; restart it", { store, error: String(e.error) });
  else if (e.kind === "peer-joined" || e.kind === "peer-left") logger.info(e.kind, { other: e.peer });
  else if (e.kind === "conflicts" && e.conflicts.length > 0) logger.warn("ledger conflicts", { conflicts: e.conflicts.map((c) => c.kind).join(",") });
  else if (e.kind === "internal-error") {
    const error = e.error instanceof Error ? (e.error.stack ?? e.error.message) : String(e.error);
    logger.error("node caught an internal error: a bug, which it contained and went on; report it with this line (later ones from the same place are not logged; /metrics counts subscriber errors)", { where: e.where, error });
  }
}
