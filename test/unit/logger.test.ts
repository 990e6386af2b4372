// The log format: pretty at a terminal, JSON anywhere else, LOG_FORMAT overriding both.
import { loadConfig } from "../../src/config";
import { chooseLogFormat } from "../../src/logger";

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
