// packages/client/examples/wire.ts — granted claims over the daemon's call wire, against a running governed peer;
// from the repository root, after eval "$(heddle env --config …)" set HEDDLE_URL and HEDDLE_TOKEN:
//   npx -y pnpm@10 exec node packages/client/examples/wire.ts
import { ApiError, HeddleWire } from "@heddle/client";

const wire = new HeddleWire({ url: process.env.HEDDLE_URL!, token: process.env.HEDDLE_TOKEN! });
try {
  // many calls in flight on one connection: eight workers race for one key, one wins
  const tries = await Promise.allSettled(
    Array.from({ length: 8 }, (_, i) => wire.claimsTake({ holder: `worker-${i}`, resources: [{ key: "report/2026-12", mode: "exclusive" }], ttlMs: 30_000 })),
  );
  const won = tries.findIndex((t) => t.status === "fulfilled");
  const refused = tries.filter((t) => t.status === "rejected" && t.reason instanceof ApiError && t.reason.status === 409);
  const { claims } = (tries[won] as PromiseFulfilledResult<{ claims: { grants: { token: number }[] } }>).value;
  console.log(`worker-${won} holds report/2026-12 (fencing token ${claims.grants[0]!.token}); ${refused.length} refused, each naming the holder:`,
    (refused[0] as PromiseRejectedResult).reason.body.refusal.blocked[0].holders);
  await wire.claimsRelease(`worker-${won}`, "report/2026-12", { token: claims.grants[0]!.token });
} finally {
  wire.close();
}
