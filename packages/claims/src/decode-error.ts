/**
 * Thrown by every decoder of this package on input it will not accept: invalid
 * JSON, a wrong format tag, unknown fields, wrong shapes, values out of range, or a
 * state no sequence of operations could have produced. A node that receives such
 * input from the network catches it, counts it and drops the frame.
 */
export class ClaimsDecodeError extends Error {
  override readonly name = "ClaimsDecodeError";
}
