import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // Under CI, also write a JSON report so .ci/run can print a plain "N passed, N failed" line.
    reporters: process.env.CI ? ["default", ["json", { outputFile: ".ci-results/vitest.json" }]] : ["default"],
  },
});
