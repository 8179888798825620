// Throughput of the in-process claims table: take + release of one key while 1, 1,000
// and 100,000 other keys are held, and all-or-nothing takes of 10 keys (granted and
// refused). Run: npx -y pnpm@10 --filter @heddle/claims bench
import { createClaims } from "../src/index.ts";
import type { ClaimsTable } from "../src/index.ts";

const SECONDS = Number(process.env["HEDDLE_BENCH_SECONDS"] ?? 1);

function filled(held: number): ClaimsTable {
  const t = createClaims();
  for (let i = 0; i < held; i++) {
    const r = t.take({ holder: `bg-${i % 100}`, resources: [{ key: `held/${i}`, mode: "exclusive" }] }, 0);
    if (!r.ok) throw new Error("prefill refused");
  }
  return t;
}

/** Runs `step` in batches until `SECONDS` have passed; returns operations per second. */
function measure(step: (i: number) => void): { opsPerSec: number; ops: number } {
  for (let i = 0; i < 2000; i++) step(i); // warm-up
  const batch = 1000;
  let ops = 0;
  const start = process.hrtime.bigint();
  const limit = BigInt(Math.round(SECONDS * 1e9));
  let elapsed = 0n;
  while (elapsed < limit) {
    for (let i = 0; i < batch; i++) step(ops + i);
    ops += batch;
    elapsed = process.hrtime.bigint() - start;
  }
  return { opsPerSec: (ops * 1e9) / Number(elapsed), ops };
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

const rows: string[][] = [];

for (const held of [1, 1_000, 100_000]) {
  const t = filled(held);
  const r = measure((i) => {
    const key = `work/${i % 64}`;
    const g = t.take({ holder: "worker", resources: [{ key, mode: "exclusive" }] }, 1);
    if (!g.ok) throw new Error("take refused");
    if (!t.release("worker", key)) throw new Error("release failed");
  });
  if (t.open().length !== held) throw new Error("held set changed");
  rows.push([`take+release of one key, ${fmt(held)} other key${held === 1 ? "" : "s"} held`, fmt(r.opsPerSec), "pairs/s"]);
}

for (const held of [1_000, 100_000]) {
  const t = filled(held);
  const keys = Array.from({ length: 10 }, (_, k) => ({ key: `batch/${k}`, mode: "exclusive" as const }));
  const r = measure(() => {
    const g = t.take({ holder: "worker", resources: keys }, 1);
    if (!g.ok) throw new Error("10-key take refused");
    if (t.releaseAll("worker").length !== 10) throw new Error("releaseAll lost keys");
  });
  rows.push([`all-or-nothing take of 10 keys + releaseAll, ${fmt(held)} held`, fmt(r.opsPerSec), "takes/s"]);
}

{
  const t = filled(1_000);
  // the tenth key is held by someone else: every take is refused and changes nothing
  const keys = [
    ...Array.from({ length: 9 }, (_, k) => ({ key: `batch/${k}`, mode: "exclusive" as const })),
    { key: "held/999", mode: "exclusive" as const },
  ];
  const r = measure(() => {
    const g = t.take({ holder: "worker", resources: keys }, 1);
    if (g.ok) throw new Error("expected a refusal");
  });
  rows.push(["all-or-nothing take of 10 keys, refused on the 10th, 1,000 held", fmt(r.opsPerSec), "takes/s"]);
}

const w0 = Math.max(...rows.map((r) => r[0]?.length ?? 0));
const w1 = Math.max(...rows.map((r) => r[1]?.length ?? 0));
console.log(`@heddle/claims in-process table, node ${process.version}, ${SECONDS}s per figure`);
for (const [what, n, unit] of rows) console.log(`${(what ?? "").padEnd(w0)}  ${(n ?? "").padStart(w1)} ${unit}`);
