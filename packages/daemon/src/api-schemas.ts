// Request and response schemas of the HTTP API. The same objects validate requests (schema.ts) and
// generate the OpenAPI description (api.ts), so the documentation cannot drift from the checks.
import { Type } from "@sinclair/typebox";
import { Amount, Id, Obj, WeightText } from "./schema.ts";

const AmountOut = Type.String({ pattern: "^-?[0-9]+$", description: "an amount of service units (decimal string)" });

/** `POST /v1/reservations` */
export const ReserveBody = Obj({
  leaf: Id("the leaf group the work runs in"),
  maximumCost: Amount("the most this work may cost; earmarked until complete/cancel", { minimum: 1 }),
});
/** `POST /v1/reservations/complete` */
export const CompleteBody = Obj({
  id: Id("the reservation id returned by reserve", 512),
  actualCost: Amount("what the work cost, 0 … maximumCost"),
});
/** `POST /v1/reservations/cancel` */
export const CancelBody = Obj({ id: Id("the reservation id returned by reserve", 512) });

/** `POST /v1/demand` */
export const DemandBody = Obj({
  edge: Type.Optional(Id("the edge the demand is for (or give leaf)")),
  leaf: Type.Optional(Id("a group: the demand is for its live inbound edge (or give edge)")),
  targetOutstanding: Amount("how much entitlement the work below wants outstanding; 0 withdraws"),
  maximumUsefulGrant: Amount("the largest grant it can use at once"),
  leaseMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 86_400_000, description: "how long the demand stands unless set again (default: the node's demandTtlMs)" })),
});

/** Query of `GET /v1/holdings`. */
export const HoldingsQuery = Obj({ group: Type.Optional(Id("one group (default: every group)")) });
/** Query of `GET /v1/bounds`. */
export const BoundsQuery = Obj({ parent: Type.Optional(Id("one parent (default: every parent with children)")) });
/** Query of `GET /v1/edge`. */
export const EdgeQuery = Obj({ id: Id("the edge id") });

/** `POST /v1/control/mint` */
export const MintBody = Obj({
  holder: Type.Optional(Id("the replica that receives the supply (default: this peer; required with an Idempotency-Key, so that a retry through any peer is the same mint)", 128)),
  amount: Amount("units to create at the root", { minimum: 1 }),
});
/** `POST /v1/control/prepare` */
export const PrepareBody = Obj({
  id: Id("the new edge's AttachmentId"),
  parent: Id("the parent group"),
  child: Id("the child group"),
  weight: WeightText("the edge's weight"),
});
/** `POST /v1/control/{activate,close,retire}` */
export const EdgeBody = Obj({ edge: Id("the edge id") });
/** `POST /v1/control/enroll` */
export const EnrollBody = Obj({ replica: Type.Optional(Id("the replica to enroll (default: this peer; required with an Idempotency-Key, so that a retry through any peer is the same enroll)", 128)) });
/** `POST /v1/control/depart` (always this peer) */
export const EmptyBody = Obj({});
/** `POST /v1/control/leader/transfer` */
export const TransferBody = Obj({ to: Id("the voter to hand leadership to", 128) });
/** Query of `GET /v1/control/outcome` */
export const OutcomeQuery = Obj({
  client: Type.Optional(Id("ProposalKey.client")),
  seq: Type.Optional(Type.String({ pattern: "^[1-9][0-9]{0,15}$", description: "ProposalKey.seq" })),
  idempotencyKey: Type.Optional(Id("the Idempotency-Key header value the call was made with", 200)),
});

const ClaimResource = Obj({ key: Id("the claim key", 512), mode: Type.Union([Type.Literal("exclusive"), Type.Literal("shared")]) });
/** `POST /v1/claims/take` */
export const TakeBody = Obj({
  holder: Id("who takes"),
  resources: Type.Array(ClaimResource, { minItems: 1, maxItems: 256 }),
  scope: Type.Optional(Id("a scope to release together")),
  ttlMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 604_800_000 })),
  label: Type.Optional(Type.String({ maxLength: 256 })),
});
/** `POST /v1/claims/renew` */
export const HolderKeyBody = Obj({ holder: Id("the holder"), key: Id("the claim key", 512) });
/** `POST /v1/claims/release`: `token` (optional) names the grant to end, so a late retry cannot end a newer one. */
export const ReleaseBody = Obj({
  holder: Id("the holder"),
  key: Id("the claim key", 512),
  token: Type.Optional(
    Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: "the fencing token of the grant to end (from take); the holder's newer grant of the key is left alone" }),
  ),
});
/** `POST /v1/claims/release-all` */
export const HolderBody = Obj({ holder: Id("the holder") });
/** `POST /v1/claims/release-scope` */
export const ScopeBody = Obj({ scope: Id("the scope") });
/** Query of `GET /v1/claims` */
export const ClaimsQuery = Obj({ key: Type.Optional(Id("one key (default: every open claim)", 512)) });

/** Every error body: a machine word, a sentence saying what to do, and the details. */
export const ErrorBody = Type.Object({
  error: Type.String({ description: "unauthorized | invalid-request | body-too-large | refused | conflict | static-mode | outcome-unknown | unavailable | not-found | internal" }),
  message: Type.String(),
  issues: Type.Optional(Type.Array(Type.Object({ field: Type.String(), in: Type.String(), problem: Type.String() }))),
  refusal: Type.Optional(Type.Object({ kind: Type.String() }, { additionalProperties: true })),
  conflict: Type.Optional(Type.Object({ reason: Type.String() }, { additionalProperties: true })),
  key: Type.Optional(Type.Unknown()),
  index: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  committed: Type.Optional(Type.Boolean({ description: "claims refusals: true when the log committed the refused take, false when the leader answered it at a confirmed read (ReadIndex) without a commit" })),
  readIndex: Type.Optional(Type.Integer({ description: "claims refusals answered at a read: the applied index the table was judged at" })),
  judgedAt: Type.Optional(Type.Number({ description: "claims refusals answered at a read: the leader's clock (ms) the leases were judged at" })),
});

/** `201` of reserve. */
export const ReserveOk = Type.Object({ id: Type.String(), leaf: Type.String(), maximumCost: AmountOut });
/** `200` of complete/cancel. */
export const CompleteOk = Type.Object({
  id: Type.String(),
  charged: AmountOut,
  outcome: Type.Union([Type.Literal("charged"), Type.Literal("no-such-reservation")]),
  /** With `no-such-reservation`: the peer whose id the reservation id starts with, when that is not this peer — send it there. */
  reservedBy: Type.Optional(Type.String()),
});
/** `200` of an applied control act. */
export const AppliedOk = Type.Object({
  kind: Type.Literal("applied"),
  index: Type.Integer(),
  key: Type.Object({ client: Type.String(), seq: Type.Integer() }),
  noop: Type.Boolean(),
  mintId: Type.Optional(Type.String()),
  claims: Type.Optional(Type.Unknown()),
  heldToken: Type.Optional(Type.Union([Type.Integer(), Type.Null()], { description: "release with a token that ended nothing: the holder's current token on the key, or null when it holds none" })),
});
const DemandOut = Type.Object({ targetOutstanding: AmountOut, maximumUsefulGrant: AmountOut });
const Millis = (description: string) => Type.Number({ description });
/** How the periodic refresh of this peer's demand slot is going (`refresh` of `GET`/`POST /v1/demand`). */
export const DemandRefresh = Type.Object(
  {
    ok: Type.Boolean({ description: "true while the latest refresh advertised everything wanted" }),
    lastSuccessAt: Type.Union([Millis("when a refresh last succeeded (ms since the epoch)"), Type.Null()]),
    failing: Type.Union([
      Type.Object({
        code: Type.Union([Type.Literal("board-full"), Type.Literal("error")], { description: "board-full: the rolled-up demand no longer fits this peer's demand slot (e.g. a reshape lengthened the lineages); error: anything else" }),
        limit: Type.Optional(Type.Union([Type.Literal("maxDemandEntries"), Type.Literal("maxFrameBytes")])),
        value: Type.Optional(Type.Integer({ description: "the limit's value" })),
        message: Type.String(),
        since: Millis("the first failure of this run of failures"),
        lastAt: Millis("the latest failure"),
        count: Type.Integer({ description: "failed refreshes in a row" }),
        unadvertised: Type.Integer({ description: "edges whose wanted demand the slot does not hold: new, changed or to withdraw (entries merely due for a refresh not counted)" }),
      }),
      Type.Null(),
    ]),
  },
  { description: "while the refresh fails nothing is re-sent: every advertised entry lapses on the peers demandTtlMs after its advertisedAt" },
);
/** `200` of `GET /v1/demand`. */
export const DemandView = Type.Object({
  standing: Type.Array(Type.Object({ edge: Type.String(), demand: DemandOut, expiresAt: Millis("when the standing demand lapses unless set again") })),
  advertised: Type.Record(Type.String(), DemandOut, { description: "per edge, what this peer's slot holds and the peers still count (lapsed entries left out)" }),
  advertisements: Type.Array(
    Type.Object({
      edge: Type.String(),
      demand: DemandOut,
      advertisedAt: Millis("when it was last advertised"),
      lapsesAt: Millis("advertisedAt + demandTtlMs: the peers stop counting it then unless it is advertised again"),
      live: Type.Boolean({ description: "false once lapsed: listed in the slot, counted by no one" }),
    }),
    { description: "every entry of this peer's demand slot, ascending edge" },
  ),
  refresh: DemandRefresh,
});
/** `200` of `POST /v1/demand`. */
export const DemandSetOk = Type.Object({
  edge: Type.String(),
  standing: Type.Union([Type.Object({ edge: Type.String(), demand: DemandOut, expiresAt: Type.Number() }), Type.Null()]),
  refresh: DemandRefresh,
});

/** A response documented loosely (its shape is in the README). */
export const AnyObject = Type.Object({}, { additionalProperties: true });
