import { describe, expect, it } from "vitest";
import { EventChannel, WatchCell } from "../src/index.ts";

describe("WatchCell and EventChannel: a subscriber that throws", () => {
  it("with onSubscriberError: the error goes to it, every other subscriber is still told, and set/emit return normally", () => {
    const handed: unknown[] = [];
    const bug = new Error("a bug in a subscriber");
    const cell = new WatchCell<number>(0, Object.is, (e) => handed.push(e));
    const channel = new EventChannel<string>((e) => handed.push(e));
    const heard: string[] = [];
    cell.subscribe(() => {
      throw bug;
    });
    cell.subscribe((v) => heard.push(`cell:${v}`));
    channel.subscribe(() => {
      throw bug;
    });
    channel.subscribe((e) => heard.push(`channel:${e}`));
    expect(() => cell.set(1)).not.toThrow();
    expect(() => channel.emit("x")).not.toThrow();
    expect(cell.get()).toBe(1);
    expect(heard).toEqual(["cell:1", "channel:x"]);
    expect(handed).toEqual([bug, bug]);
  });

  it("without one: the error propagates out of set/emit, as before (the owner has said nothing about it)", () => {
    const cell = new WatchCell<number>(0);
    const channel = new EventChannel<string>();
    cell.subscribe(() => {
      throw new Error("cell");
    });
    channel.subscribe(() => {
      throw new Error("channel");
    });
    expect(() => cell.set(1)).toThrow("cell");
    expect(() => channel.emit("x")).toThrow("channel");
  });
});
