// GCS_PUBLIC_URL: the OAuth issuer must be an origin, HTTPS except on loopback.
import { loadConfig } from "../../src/config";

const publicUrl = (value?: string, port = "3000") => loadConfig({ PORT: port, ...(value === undefined ? {} : { GCS_PUBLIC_URL: value }) }).publicUrl;

it("defaults to http://localhost:PORT and keeps an https origin", () => {
  expect(publicUrl(undefined, "8080")).toBe("http://localhost:8080");
  expect(publicUrl("https://guests.example.com/")).toBe("https://guests.example.com");
  expect(publicUrl("http://127.0.0.1:4000")).toBe("http://127.0.0.1:4000");
});

it("refuses plain http off loopback, paths, queries and non-URLs with a one-line reason", () => {
  for (const bad of ["http://guests.example.com", "https://guests.example.com/api", "https://x.example?a=1", "guests.example.com", "javascript:alert(1)"]) {
    expect(() => publicUrl(bad)).toThrow(/^invalid configuration: GCS_PUBLIC_URL/);
  }
});
