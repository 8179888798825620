/** The `heddle` command's exit codes (documented in the cli README). */
export const EXIT = Object.freeze({
  /** Done. */
  ok: 0,
  /** An unexpected failure (a bug; the message says where). */
  internal: 1,
  /** The command line is wrong (unknown command or option, missing argument). */
  usage: 2,
  /**
   * The daemon refused the request or it conflicts (HTTP 409: a spec refusal or conflict, or static mode), or this
   * peer cannot serve it at all (HTTP 501: its node has no keeper or advisory claims). Retrying will not help.
   */
  refused: 3,
  /**
   * The daemon cannot be reached (not running, wrong address, no connection in time): the request never left. Or a
   * read got no whole answer. A write that was sent and lost its answer is {@link EXIT.unknown}.
   */
  unreachable: 4,
  /** The daemon refused the token (HTTP 401). */
  unauthorized: 5,
  /**
   * The outcome is unknown (HTTP 504, or a write that was sent and lost its answer — a timeout, a reset, an answer
   * cut short: retry with the same --idempotency-key, or `heddle outcome`) or the daemon is unavailable (503).
   */
  unknown: 6,
  /** The daemon rejected the request as malformed (HTTP 400 / 404 / 413 / 415). */
  invalid: 7,
  /** The config file (`start`, `up`, or any command given `--config`) is missing or invalid. */
  config: 8,
  /** `start`/`up`: the daemon could not start (busy port, store of another cluster, missing key or token). */
  startFailed: 9,
  /**
   * `claims advisory`: the claim was recorded but an earlier claimant holds the item; `claims keeper|look --check`:
   * this peer may not act on the part (not the keeper, or not settled; `look --check`: or no part is configured); `claims next`:
   * every candidate is held by another peer; `claims renew`:
   * the holder does not hold the key (or its lease lapsed); `claims release --fencing-token`: the holder holds
   * the key under another (newer) token, which was left alone. Not an error: the answer is "not yours".
   */
  notYours: 10,
  /**
   * `complete`/`cancel`: the daemon has no open reservation under the id (completed or cancelled already — a retry
   * after a lost answer lands here — or never made on this peer): nothing was charged or released.
   */
  noSuchReservation: 11,
});

/** One of {@link EXIT}'s values. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * The exit code of each HTTP error status the daemon answers with; any other status is {@link EXIT.internal}. The
 * README's exit-code table names these statuses (test/exit-codes.test.ts checks that it does).
 */
export const HTTP_EXIT: Readonly<Record<number, ExitCode>> = Object.freeze({
  400: EXIT.invalid,
  401: EXIT.unauthorized,
  404: EXIT.invalid,
  409: EXIT.refused,
  413: EXIT.invalid,
  415: EXIT.invalid,
  501: EXIT.refused,
  503: EXIT.unknown,
  504: EXIT.unknown,
});

/** The commands that exit {@link EXIT.notYours}, as USAGE and the README name them. */
export const NOT_YOURS_COMMANDS = ["claims advisory", "claims keeper --check", "claims look --check", "claims renew", "claims next", "claims release --fencing-token"] as const;

/** A command-line mistake: printed with the command's usage, exit {@link EXIT.usage}. */
export class UsageError extends Error {}
