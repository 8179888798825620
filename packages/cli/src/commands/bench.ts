// `heddle bench`: reserve + complete pairs against a running daemon.
import { EXIT, UsageError } from "../exit-codes.ts";
import { benchPairs } from "../bench.ts";
import { TARGET_HELP } from "../target.ts";
import { parseApiArgs } from "./api-commands.ts";
import type { Io } from "./io.ts";

export const BENCH_HELP = `heddle bench — API latency: reserve + complete pairs against a running daemon

Usage: heddle bench --leaf LEAF [--concurrency N] [--duration S] [--cost C] [--no-demand]

  --leaf LEAF        where the work is reserved (a leaf group)
  --concurrency N    loops running pairs at once (default 1)
  --duration S       seconds to run (default 10)
  --cost C           maximum and actual cost of every pair (default 1)
  --no-demand        do not stand demand for LEAF first (by default the bench asks for
                     entitlement there and waits until some arrives)

Prints a line of figures, then {"opsPerSec":…,"p50Ms":…,"p99Ms":…} (one pair = one op).

${TARGET_HELP}
`;

/** `heddle bench` */
export async function benchCommand(argv: string[], io: Io): Promise<number> {
  const { values: v, positionals, client } = parseApiArgs(argv, {
    leaf: { type: "string" },
    concurrency: { type: "string" },
    duration: { type: "string" },
    cost: { type: "string" },
    "no-demand": { type: "boolean" },
  });
  if (v["help"]) return io.out(BENCH_HELP), EXIT.ok;
  if (positionals.length > 0 || v["leaf"] === undefined) throw new UsageError("usage: heddle bench --leaf LEAF [--concurrency N] [--duration S] [--cost C] [--no-demand]");
  const concurrency = Number(v["concurrency"] ?? "1");
  const duration = Number(v["duration"] ?? "10");
  const cost = (v["cost"] as string | undefined) ?? "1";
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1024) throw new UsageError("--concurrency must be 1…1024");
  if (!Number.isFinite(duration) || duration <= 0 || duration > 3600) throw new UsageError("--duration must be 0…3600 seconds");
  if (!/^[1-9][0-9]{0,17}$/.test(cost)) throw new UsageError("--cost must be a positive integer");
  const c = client();
  try {
    const leaf = v["leaf"] as string;
    if (!v["no-demand"]) {
      const want = BigInt(cost) * BigInt(concurrency) * 100_000n;
      await c.demand({ leaf, targetOutstanding: want, maximumUsefulGrant: want, leaseMs: Math.ceil(duration * 1000) + 60_000 });
      const deadline = Date.now() + 10_000;
      for (;;) {
        const h = (await c.holdings(leaf)) as { groups: { available: string | null }[] };
        const available = h.groups[0]?.available;
        if (available === null) {
          io.err(`heddle bench: this daemon does not report what is available at ${leaf}; run with --no-demand once the leaf holds entitlement\n`);
          return EXIT.refused;
        }
        if (BigInt(available ?? "0") >= BigInt(cost) * BigInt(concurrency)) break;
        if (Date.now() > deadline) {
          io.err(`heddle bench: no entitlement arrived at ${leaf} within 10 s; is it a leaf with supply above it?\n`);
          return EXIT.refused;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const r = await benchPairs(c, { leaf, concurrency, durationMs: duration * 1000, cost: BigInt(cost) });
    io.err(`reserve+complete  concurrency ${r.concurrency}  ${r.durationS} s  ${r.pairs} pairs  ${r.opsPerSec} pairs/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  refused ${r.refused}\n`);
    io.out(`${JSON.stringify({ opsPerSec: r.opsPerSec, p50Ms: r.p50Ms, p99Ms: r.p99Ms, concurrency: r.concurrency, durationS: r.durationS, pairs: r.pairs, refused: r.refused })}\n`);
    return EXIT.ok;
  } finally {
    c.close();
  }
}
