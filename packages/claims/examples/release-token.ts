// A release that names its grant: a late retry cannot end a newer grant.
// Run: npx -y pnpm@10 exec node packages/claims/examples/release-token.ts
import { createClaims } from "../src/index.ts";

const board = createClaims();
const take = (now: number) => {
  const o = board.take({ holder: "migrator", resources: [{ key: "db/schema", mode: "exclusive" }] }, now);
  if (!o.ok) throw new Error("db/schema should be free");
  return o.grants[0]!.token;
};

// The migrator takes the key, finishes, and releases it naming its grant; the answer is lost on the way back.
const first = take(1_000);
console.log(`took db/schema with token ${first}; released:`, board.release("migrator", "db/schema", 2_000, first));

// It takes the key again for the next migration.
const second = take(3_000);
console.log(`took db/schema again with token ${second}`);

// The first release arrives again, long after any idempotency window: it names the old grant, so it ends nothing.
console.log(`late retry with token ${first} released:`, board.release("migrator", "db/schema", 4_000, first));
console.log(`token ${second} still current:`, board.checkFence("db/schema", second));
