// Dashboard viewers for the bench: y-websocket clients (the page's frames: a sync request, then every update
// applied to a local Y.Doc), counting what they receive.
import * as decoding from "lib0/decoding";
import * as encoding from "lib0/encoding";
import WebSocket from "ws";
import * as syncProtocol from "y-protocols/sync";
import * as Y from "yjs";
import { DASHBOARD_SOCKET_PATH, DASHBOARD_SUBPROTOCOL } from "../src/dashboard-socket.ts";

/** One viewer. */
export class BenchViewer {
  readonly doc = new Y.Doc();
  readonly ws: WebSocket;
  bytes = 0;
  frames = 0;
  /** Sizes of the frames received after the first sync. */
  readonly updateSizes: number[] = [];
  readonly synced: Promise<void>;

  constructor(url: string, token: string) {
    this.ws = new WebSocket(`${url.replace(/^http/, "ws")}${DASHBOARD_SOCKET_PATH}`, [DASHBOARD_SUBPROTOCOL, `bearer.${token}`]);
    let done: () => void;
    this.synced = new Promise((ok, fail) => {
      done = ok;
      this.ws.once("error", fail);
    });
    let isSynced = false;
    this.ws.on("open", () => {
      const e = encoding.createEncoder();
      encoding.writeVarUint(e, 0);
      syncProtocol.writeSyncStep1(e, this.doc);
      this.ws.send(encoding.toUint8Array(e));
    });
    this.ws.on("message", (data: Buffer) => {
      this.bytes += data.byteLength;
      this.frames++;
      if (isSynced) this.updateSizes.push(data.byteLength);
      const d = decoding.createDecoder(new Uint8Array(data));
      decoding.readVarUint(d);
      if (syncProtocol.readSyncMessage(d, encoding.createEncoder(), this.doc, "server") === syncProtocol.messageYjsSyncStep2) {
        isSynced = true;
        done();
      }
    });
  }

  close(): void {
    this.ws.close();
  }
}
