/**
 * Thrown by every decoder of this package on input it will not accept: invalid
 * JSON, a wrong format tag, unknown fields, wrong shapes, values out of range, or a
 * state no sequence of operations could have produced. A node that receives such
 * input from the network catches it, counts it and drops the frame. `bound` names the
 * limit a rejected input exceeded (`claims`: more than `MAX_SLOT_CLAIMS` claims in a
 * slot; `text`: longer than its text limit), so a receiver can count it by reason.
 */
export class ClaimsDecodeError extends Error {
  override readonly name = "ClaimsDecodeError";
  readonly bound: "claims" | "text" | undefined;

  constructor(message: string, bound?: "claims" | "text") {
    super(message);
    this.bound = bound;
  }
}
