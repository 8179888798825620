/** `@heddle/client` — a typed client of the heddle daemon's HTTP API (used by the CLI, benches and tests). */
export { HeddleClient, ApiError, DaemonUnreachableError } from "./client.ts";
export type { HeddleClientOptions, CallOptions, ApiErrorBody, AmountIn } from "./client.ts";
