// Governed mode on an etcd cluster the operator already runs (issue 18): the `mode.etcd` block of the config
// file and its resolution (paths relative to the config file). Opening the log is `etcd-log.ts`.
import { isAbsolute, resolve } from "node:path";
import { Type, type Static } from "@sinclair/typebox";
import { Obj } from "./schema.ts";

const Url = Type.String({ minLength: 1, maxLength: 512, pattern: "^https?://[^/]+/?$", "x-expected": "an etcd client URL such as https://10.0.0.1:2379" });
const File = (description: string) => Type.String({ minLength: 1, maxLength: 4096, description: `${description}; relative to this file` });

/** `mode.etcd`: keep the control log on etcd instead of the embedded Raft (then `voters`/`learners`/`raft` are unused). */
export const EtcdLogSchema = Obj(
  {
    endpoints: Type.Array(Url, { minItems: 1, maxItems: 16, description: "client URLs of the etcd members" }),
    prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "key prefix of this cluster's log (default heddle/control/); the same on every peer" })),
    tls: Type.Optional(
      Obj({
        caFile: File("PEM CA certificate(s) that signed etcd's server certificates"),
        certFile: Type.Optional(File("PEM client certificate, for etcd's --client-cert-auth")),
        keyFile: Type.Optional(File("PEM client private key")),
      }),
    ),
    auth: Type.Optional(Obj({ username: Type.String({ minLength: 1, maxLength: 256 }), passwordFile: File("file holding the etcd user's password") })),
    callTimeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 120_000, description: "deadline of one etcd call, all its attempts included (default 5000)" })),
    attemptTimeoutMs: Type.Optional(
      Type.Integer({ minimum: 50, maximum: 120_000, description: "deadline of one attempt of an etcd call, after which the call retries on another etcd member (default 1500; at most callTimeoutMs)" }),
    ),
    unavailableAfterMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000, description: "etcd unanswered this long closes the writer gate (default 3000)" })),
  },
  { description: "the control log on an existing etcd v3 cluster instead of the embedded Raft" },
);

export type EtcdLogDocument = Static<typeof EtcdLogSchema>;

/** `mode.etcd`, resolved: file paths absolute. */
export interface EtcdLogSettings {
  readonly endpoints: readonly string[];
  readonly prefix?: string;
  readonly tls?: { readonly caFile: string; readonly certFile?: string; readonly keyFile?: string };
  readonly auth?: { readonly username: string; readonly passwordFile: string };
  readonly callTimeoutMs?: number;
  readonly attemptTimeoutMs?: number;
  readonly unavailableAfterMs?: number;
}

/** Resolves `mode.etcd` against the config file's directory; reports a half-given client certificate. */
export function resolveEtcdLog(d: EtcdLogDocument, base: string, issues: { field: string; problem: string }[]): EtcdLogSettings {
  const at = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  if (d.tls !== undefined && (d.tls.certFile === undefined) !== (d.tls.keyFile === undefined)) {
    issues.push({ field: `mode.etcd.tls.${d.tls.certFile === undefined ? "certFile" : "keyFile"}`, problem: "is missing: a client certificate needs both certFile and keyFile" });
  }
  const callMs = d.callTimeoutMs ?? 5_000;
  if (d.attemptTimeoutMs !== undefined && d.attemptTimeoutMs > callMs) {
    issues.push({ field: "mode.etcd.attemptTimeoutMs", problem: `is above callTimeoutMs (${callMs}): an attempt never outlives its call — lower it, or raise callTimeoutMs` });
  }
  return {
    endpoints: [...d.endpoints],
    ...(d.prefix !== undefined ? { prefix: d.prefix } : {}),
    ...(d.tls !== undefined
      ? { tls: { caFile: at(d.tls.caFile), ...(d.tls.certFile !== undefined ? { certFile: at(d.tls.certFile) } : {}), ...(d.tls.keyFile !== undefined ? { keyFile: at(d.tls.keyFile) } : {}) } }
      : {}),
    ...(d.auth !== undefined ? { auth: { username: d.auth.username, passwordFile: at(d.auth.passwordFile) } } : {}),
    ...(d.callTimeoutMs !== undefined ? { callTimeoutMs: d.callTimeoutMs } : {}),
    ...(d.attemptTimeoutMs !== undefined ? { attemptTimeoutMs: d.attemptTimeoutMs } : {}),
    ...(d.unavailableAfterMs !== undefined ? { unavailableAfterMs: d.unavailableAfterMs } : {}),
  };
}

