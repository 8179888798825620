// Advisory mode: offline agents claim without exclusion; one merge settles who holds what.
// Run: npx -y pnpm@10 exec node packages/claims/examples/advisory.ts
import { advisoryHolder, claimAdvisory, duplicates, joinAdvisorySlots, next, nextUnclaimed } from "../src/index.ts";
import type { AdvisorySlots } from "../src/index.ts";

const problems = ["problem/1", "problem/2", "problem/3", "problem/4", "problem/5"];
const agents = ["agent-a", "agent-b", "agent-c", "agent-d"];

// Offline, each agent sees an empty board and takes the first item in its own order.
let merged: AdvisorySlots = new Map();
agents.forEach((agent, i) => {
  const pick = next(problems, agent)[0] ?? "";
  const slot = claimAdvisory(undefined, agent, 0, pick, 1_000 + i, 3_600_000);
  console.log(`${agent} claims ${pick}`);
  merged = joinAdvisorySlots(merged, new Map([[agent, slot]]));
});

// Back online: one merge, and every peer agrees who holds each item and who duplicated work.
for (const d of duplicates(merged, 2_000)) {
  const redo = nextUnclaimed(problems, d.loser.peer, merged, 2_000);
  console.log(`${d.loser.peer} lost ${d.item} to ${d.winner.peer}; next unclaimed for it: ${redo}`);
}
console.log("problem/1 held by:", advisoryHolder(merged, "problem/1", 2_000)?.peer ?? "nobody");
