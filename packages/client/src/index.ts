/** `@heddle/client` — a typed client of the heddle daemon's HTTP API (used by the CLI, benches and tests). */
export { HeddleClient, ApiError, BadResponseError, ClientOptionError, DaemonUnreachableError, DEFAULT_MAX_RESPONSE_BYTES, MAX_IDEMPOTENCY_KEY_LENGTH } from "./client.ts";
export type { RawAnswer, HeddleClientOptions, CallOptions, ApiErrorBody, AmountIn, FailedRequest } from "./client.ts";
export { HeddleWire, DEFAULT_MAX_WIRE_ANSWER_BYTES } from "./wire.ts";
export type { HeddleWireOptions, WireAnswer } from "./wire.ts";
export { CALL_WIRE_PATH, CALL_WIRE_PROTOCOL, FrameReader, FrameTooLargeError, TurnWriter, encodeCall, decodeCall, encodeAnswer, decodeAnswer, MAX_CALL_PATH_BYTES } from "./wire-frames.ts";
export type { OversizedFrame } from "./wire-frames.ts";
export type { CallFrame, CallFrameProblem } from "./wire-frames.ts";
