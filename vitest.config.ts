import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/**/*.test.ts"],
    // Stryker's sandboxes are full copies of the repo; never run their tests as ours.
    exclude: [...configDefaults.exclude, "**/.stryker-tmp/**"],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // Under CI, also write a JSON report so .ci/run can print a plain "N passed, N failed" line.
    reporters: process.env.CI ? ["default", ["json", { outputFile: ".ci-results/vitest.json" }]] : ["default"],
  },
});
