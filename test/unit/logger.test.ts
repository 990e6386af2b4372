// The log format: pretty at a terminal, JSON anywhere else, LOG_FORMAT overriding both.
import { loadConfig } from "../../src/config";
import { chooseLogFormat, createLogger } from "../../src/logger";

describe("chooseLogFormat", () => {
  it("is pretty at a terminal and JSON in files, pipes and collectors", () => {
    expect(chooseLogFormat(undefined, true)).toBe("pretty");
    expect(chooseLogFormat(undefined, false)).toBe("json");
    expect(chooseLogFormat(undefined, undefined)).toBe("json"); // process.stdout.isTTY is undefined when piped
  });

  it("follows LOG_FORMAT either way", () => {
    expect(chooseLogFormat("json", true)).toBe("json");
    expect(chooseLogFormat("pretty", false)).toBe("pretty");
    expect(chooseLogFormat(loadConfig({ LOG_FORMAT: "json" }).logFormat, true)).toBe("json");
    expect(loadConfig({}).logFormat).toBeUndefined();
    expect(() => loadConfig({ LOG_FORMAT: "yaml" })).toThrow(/LOG_FORMAT/);
  });
});

describe("createLogger", () => {
  it("redacts fields named like a secret, at the top level and one level down", () => {
    const lines: string[] = [];
    const logger = createLogger("info", "json", { write: (line: string) => lines.push(line) });
    logger.info({ token: "gcs_top", secret: "s1", password: "p1", authorization: "Bearer x", key: { token: "gcs_nested" }, headers: { authorization: "Bearer y" } }, "hello");
    const entry = JSON.parse(lines[0]);
    expect(lines[0]).not.toMatch(/gcs_top|gcs_nested|s1|p1|Bearer/);
    expect(entry).toMatchObject({ token: "[redacted]", secret: "[redacted]", password: "[redacted]", key: { token: "[redacted]" }, msg: "hello" });
  });
});
