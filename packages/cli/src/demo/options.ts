/** Options of `heddle demo`, validated. */
export interface DemoOptions {
  /** Number of peer processes (≥ 3: one is cut off and another killed while the rest carry on). */
  peers: number;
  /** Length of the run in seconds, before the final settle. */
  durationS: number;
  /** Seeds every random choice of the run (work sizes, kill moment, transport jitter). */
  seed: number;
  /** Weights of tenant-a and tenant-b. */
  tenantWeights: [bigint, bigint];
  /** Weights of each tenant's interactive and batch lanes. */
  laneWeights: [bigint, bigint];
  /** Where peer keys and SQLite stores live; a fresh temporary folder when absent. */
  dir: string | undefined;
  /** Redraw the table in place (a terminal) or print a progress line every 5 s (a log). */
  live: boolean;
  /**
   * Governed mode (governed.md): no genesis supply or topology — supply is minted and the tree prepared and
   * activated through the Raft log, and midway the tenant weights change by the reshape recipe.
   */
  governed: boolean;
  /** Governed mode: the tenant weights the midway reshape moves to (default: --weights reversed). */
  reshapeWeights: [bigint, bigint] | undefined;
  /** Port of peer 0's live dashboard on 127.0.0.1 (0: a free one), or null for none. */
  dashboardPort: number | null;
}

/** Upper limits on the options, so a typo cannot start a thousand processes. */
export const DEMO_LIMITS = { maxPeers: 12, minDurationS: 10, maxDurationS: 3_600 } as const;

export const DEMO_HELP = `heddle demo — a live fair-share run on real processes

Starts N peers as separate OS processes on 127.0.0.1, talking libp2p (TCP + Noise + Yamux),
each with its own SQLite store. The tree has two tenants, each with two lanes:

    root ─┬─ tenant-a (weight A) ─┬─ interactive (weight I)
          │                       └─ batch       (weight B)
          └─ tenant-b (weight b) ─┬─ interactive (weight I)
                                  └─ batch       (weight B)

Workers on every peer reserve, run and complete work on every lane, continuously; each peer
schedules its own entitlement down the tree. The screen shows each lane's committed service
against its weighted fair share. Midway one peer is cut off (its process keeps running and
keeps spending what it holds) and later healed; another is killed with SIGKILL and restarted
from its SQLite store. Peer 0 serves a live dashboard in the browser (its URL is printed at
the start). The run ends with a table: share vs weight per group, the bound
metrics (configured, current, observed), frames rejected, and the conservation identity
checked on every peer. Exit status 0 iff every check passed.

With --governed the peers run governed mode: nothing is pre-partitioned. The first three peers are
Raft voters and the rest learners, all on the same libp2p connections; the supply is minted and the
tree prepared and activated through the replicated log, and midway the tenant weights change by the
reshape recipe (prepare the new generations, close the old ones, drain them, retire, activate) —
visible in the live table and checked in the final report.

Usage: heddle demo [options]

Options:
  --peers N            peer processes, ${3}…${DEMO_LIMITS.maxPeers}            (default 4)
  --duration S         seconds of work before the final settle          (default 60)
  --seed N             seed for every random choice                     (default 1)
  --weights A:b        tenant weights                                   (default 3:1)
  --lane-weights I:B   lane weights inside each tenant                  (default 1:1)
  --dir PATH           keep keys and stores here instead of a temp dir
  --no-live            print progress lines instead of redrawing the screen
  --governed           governed mode: supply and tree through the Raft log, weights reshaped midway
  --reshape-weights A:b  with --governed: the tenant weights after the reshape (default: reversed)
  --dashboard-port P   serve peer 0's live dashboard on 127.0.0.1:P      (default 0: a free port)
  --no-dashboard       no dashboard
  -h, --help           this text
`;

/** Thrown for bad command-line input; the message says what and how to fix it. */
export class DemoUsageError extends Error {
  override name = "DemoUsageError";
}

function int(flag: string, v: string | undefined, min: number, max: number): number {
  if (v === undefined || !/^\d+$/.test(v)) throw new DemoUsageError(`${flag} needs a whole number, got ${v ?? "nothing"}`);
  const n = Number(v);
  if (n < min || n > max) throw new DemoUsageError(`${flag} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function ratio(flag: string, v: string | undefined): [bigint, bigint] {
  const m = v === undefined ? null : /^([1-9]\d{0,5}):([1-9]\d{0,5})$/.exec(v);
  if (m === null) throw new DemoUsageError(`${flag} needs two positive whole numbers like 3:1, got ${v ?? "nothing"}`);
  return [BigInt(m[1]!), BigInt(m[2]!)];
}

/** Parses `heddle demo` arguments; returns "help" when help was asked for. */
export function parseDemoArgs(argv: readonly string[], isTty: boolean): DemoOptions | "help" {
  const o: DemoOptions = {
    peers: 4,
    durationS: 60,
    seed: 1,
    tenantWeights: [3n, 1n],
    laneWeights: [1n, 1n],
    dir: undefined,
    live: isTty,
    governed: false,
    reshapeWeights: undefined,
    dashboardPort: 0,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.startsWith("--") && a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case "-h":
      case "--help":
        return "help";
      case "--peers":
        o.peers = int(flag, value(), 3, DEMO_LIMITS.maxPeers);
        break;
      case "--duration":
        o.durationS = int(flag, value(), DEMO_LIMITS.minDurationS, DEMO_LIMITS.maxDurationS);
        break;
      case "--seed":
        o.seed = int(flag, value(), 0, 2 ** 31 - 1);
        break;
      case "--weights":
        o.tenantWeights = ratio(flag, value());
        break;
      case "--lane-weights":
        o.laneWeights = ratio(flag, value());
        break;
      case "--dir": {
        const d = value();
        if (d === undefined || d === "") throw new DemoUsageError("--dir needs a path");
        o.dir = d;
        break;
      }
      case "--no-live":
        o.live = false;
        break;
      case "--governed":
        o.governed = true;
        break;
      case "--reshape-weights":
        o.reshapeWeights = ratio(flag, value());
        break;
      case "--dashboard-port":
        o.dashboardPort = int(flag, value(), 0, 65_535);
        break;
      case "--no-dashboard":
        o.dashboardPort = null;
        break;
      default:
        throw new DemoUsageError(`unknown option ${a} (see heddle demo --help)`);
    }
  }
  if (o.reshapeWeights !== undefined && !o.governed) throw new DemoUsageError("--reshape-weights needs --governed (a static demo has no serializer for reshapes)");
  if (o.governed && o.reshapeWeights === undefined) o.reshapeWeights = [o.tenantWeights[1], o.tenantWeights[0]];
  if (o.governed && o.reshapeWeights![0] === o.tenantWeights[0] && o.reshapeWeights![1] === o.tenantWeights[1]) {
    throw new DemoUsageError("--reshape-weights must differ from --weights (the reshape changes them)");
  }
  return o;
}
