// Granted mode: one table decides. Run: npx -y pnpm@10 exec node packages/claims/examples/granted.ts
import { createClaims, heldList } from "../src/index.ts";

const board = createClaims({ roster: ["src/parser.ts", "src/lexer.ts"], maxPerHolder: 1 });

// Three members read the board at the same moment: nothing is held yet.
console.log("free:", board.free()?.join(", "));

// All three then take the same file. One is granted; the others are told whom to ask.
for (const member of ["scout#1", "scout#2", "scout#3"]) {
  const outcome = board.take({ holder: member, resources: [{ key: "src/parser.ts", mode: "exclusive" }], ttlMs: 60_000 }, 1_000);
  if (outcome.ok) console.log(`${member} holds src/parser.ts with token ${outcome.grants[0]?.token}`);
  else for (const b of outcome.blocked) console.log(`${member} refused: ${b.key} is ${b.reason} by ${b.holders.join(", ")}`);
}
console.log(heldList(board.open()));

// scout#1 stalls past its lease; scout#2 takes the file; scout#1's late write carries a stale token.
const late = board.take({ holder: "scout#2", resources: [{ key: "src/parser.ts", mode: "exclusive" }] }, 62_000);
console.log("scout#2 granted after the lease lapsed:", late.ok);
console.log("write stamped with token 1 accepted:", board.checkFence("src/parser.ts", 1));
