/** `@heddle/client` — a typed client of the heddle daemon's HTTP API (used by the CLI, benches and tests). */
export { HeddleClient, ApiError, BadResponseError, ClientOptionError, DaemonUnreachableError, DEFAULT_MAX_RESPONSE_BYTES, MAX_IDEMPOTENCY_KEY_LENGTH } from "./client.ts";
export type { RawAnswer, HeddleClientOptions, CallOptions, ApiErrorBody, AmountIn, FailedRequest } from "./client.ts";
