// The API's body parser refuses a key given twice in one object (JSON.parse keeps the last) and keys reaching a
// prototype; it must never refuse a body JSON.stringify could have written.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonKeyProblem } from "../src/json-body.ts";

const key = fc.string({ maxLength: 6 }).filter((k) => k !== "__proto__" && k !== "prototype");
const value = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: "small" }, fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie("v"), { maxLength: 4 }), fc.dictionary(key, tie("v"), { maxKeys: 4 })),
})).v;

describe("jsonKeyProblem", () => {
  it("finds nothing in what JSON.stringify writes (keys with quotes, braces and escapes included)", () => {
    fc.assert(fc.property(value, (v) => jsonKeyProblem(JSON.stringify(v)) === null));
  });

  it("names the repeated key by its path, however it is spelled", () => {
    fc.assert(
      fc.property(fc.dictionary(key, fc.integer(), { minKeys: 1, maxKeys: 5 }), fc.nat(), (obj, pick) => {
        const keys = Object.keys(obj);
        const k = keys[pick % keys.length]!;
        const text = JSON.stringify({ outer: [0, obj] }).replace(/\}\]\}$/, () => `,${JSON.stringify(k)}:1}]}`);
        expect(jsonKeyProblem(text)).toEqual({ field: `outer[1].${k}`, problem: expect.stringMatching(/^is given twice/) });
      }),
    );
    expect(jsonKeyProblem('{"a\\u0062":1,"ab":2}')?.field).toBe("ab");
    expect(jsonKeyProblem('[{"a":1},{"a":1}]')).toBeNull();
    expect(jsonKeyProblem('{"s":"{\\"y\\":1,\\"y\\":2}"}')).toBeNull();
  });

  it("refuses __proto__ anywhere and constructor.prototype", () => {
    expect(jsonKeyProblem('{"a":[{"__proto__":{}}]}')).toEqual({ field: "a[0].__proto__", problem: expect.stringMatching(/prototype/) });
    expect(jsonKeyProblem('{"constructor":{"prototype":{}}}')?.field).toBe("constructor.prototype");
    expect(jsonKeyProblem('{"prototype":1,"constructor":1}')).toBeNull();
  });
});
