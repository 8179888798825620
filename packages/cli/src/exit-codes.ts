/** The `heddle` command's exit codes (documented in the cli README). */
export const EXIT = Object.freeze({
  /** Done. */
  ok: 0,
  /** An unexpected failure (a bug; the message says where). */
  internal: 1,
  /** The command line is wrong (unknown command or option, missing argument). */
  usage: 2,
  /** The daemon refused the request or it conflicts (HTTP 409: a spec refusal or conflict, or static mode). */
  refused: 3,
  /** The daemon cannot be reached (not running, wrong address, no answer in time). */
  unreachable: 4,
  /** The daemon refused the token (HTTP 401). */
  unauthorized: 5,
  /** The outcome is unknown (HTTP 504: retry with the same --idempotency-key) or the daemon is unavailable (503). */
  unknown: 6,
  /** The daemon rejected the request as malformed (HTTP 400 / 413 / 404). */
  invalid: 7,
  /** `start`/`up`: the config file is invalid. */
  config: 8,
  /** `start`/`up`: the daemon could not start (busy port, store of another cluster, missing key or token). */
  startFailed: 9,
  /**
   * `claims advisory`: the claim was recorded but an earlier claimant holds the item; `claims keeper|look --check`:
   * this peer may not act on the part (not the keeper, or not settled; `look --check`: or no part is configured); `claims renew`:
   * the holder does not hold the key (or its lease lapsed); `claims release --fencing-token`: the holder holds
   * the key under another (newer) token, which was left alone. Not an error: the answer is "not yours".
   */
  notYours: 10,
});

/** One of {@link EXIT}'s values. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A command-line mistake: printed with the command's usage, exit {@link EXIT.usage}. */
export class UsageError extends Error {}
