// Keeper mode: every peer applies the same rule to the same replicated claims.
// Run: npx -y pnpm@10 exec node packages/claims/examples/keeper.ts
import { keeperState, lookKeeper, receiveKeeperSlot, renewKeeper } from "../src/index.ts";

const rules = { invoices: "stays-put", reminders: "follows-you" } as const;
let desk = keeperState({ self: "desk", epoch: 1, rules });
let laptop = keeperState({ self: "laptop", epoch: 1, rules });

// Both machines renew their claims (the desk takes invoices on purpose) and gossip their slots.
const d = renewKeeper(desk, "invoices", 0, { take: true });
const l = renewKeeper(laptop, "invoices", 5_000);
desk = receiveKeeperSlot(d.state, "laptop", l.slot, 5_100).state;
laptop = receiveKeeperSlot(l.state, "desk", d.slot, 5_100).state;

// Both compute the same keeper; the desk waits out the settling time before numbering invoices.
function show(at: number): void {
  const seenByDesk = lookKeeper(desk, "invoices", at).view;
  const seenByLaptop = lookKeeper(laptop, "invoices", at).view;
  console.log(`t=${at / 1000}s keeper: ${seenByDesk.keeper} (laptop agrees: ${seenByLaptop.keeper === seenByDesk.keeper}); desk may act: ${seenByDesk.mayAct}, sure: ${seenByDesk.sure}`);
  desk = lookKeeper(desk, "invoices", at).state;
}
show(10_000);
// The laptop renews every minute; the desk hears it again.
desk = receiveKeeperSlot(desk, "laptop", renewKeeper(l.state, "invoices", 65_000).slot, 65_100).state;
// Settled, but sure (for what must never happen twice) only once it has heard the laptop for the settling time too.
show(125_000);
show(126_000);
