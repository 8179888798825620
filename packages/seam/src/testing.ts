/**
 * `@heddle/seam/testing` — helpers for simulations and tests, kept out of the production surface:
 * deterministic virtual time and a harness that starts libp2p seams on 127.0.0.1.
 */
export { VirtualTimers } from "./virtual-timers.ts";
export { startLibp2pSeams, sleep } from "./libp2p-harness.ts";
