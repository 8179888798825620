import type { TakeOutcome } from "../../src/index.ts";

/** The outcome narrowed to a grant; anything else fails the test with the outcome printed. */
export function granted(o: TakeOutcome) {
  if (!o.ok) throw new Error(`expected a grant, got ${JSON.stringify(o)}`);
  return o;
}

/** The outcome narrowed to a refusal; a grant fails the test with the outcome printed. */
export function refused(o: TakeOutcome) {
  if (o.ok) throw new Error(`expected a refusal, got ${JSON.stringify(o)}`);
  return o;
}
