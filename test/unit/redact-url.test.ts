// Connection strings in log lines and CLI errors: the password and every credential-bearing query
// parameter are replaced, the rest (host, port, database, harmless parameters) is kept for debugging.
import { redactUrl, redactUrlsIn } from "../../src/redact-url";

describe("redactUrl", () => {
  it("removes the userinfo password and keeps the rest", () => {
    expect(redactUrl("postgresql://gcs:s3cret@db.internal:5432/gcs")).toBe("postgresql://gcs:redacted@db.internal:5432/gcs");
    expect(redactUrl("postgresql://gcs@db.internal/gcs")).toBe("postgresql://gcs@db.internal/gcs");
  });

  it("removes every credential-bearing query parameter, whatever its case", () => {
    const out = redactUrl(
      "postgres://gcs@db/gcs?password=p1&sslpassword=p2&sslmode=require&sslkey=/k.pem&PassWord=p3&api_key=p4&auth_token=p5&client_secret=p6&application_name=gcs&password=p7",
    );
    for (const secret of ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "/k.pem", "%2Fk.pem"]) expect(out).not.toContain(`=${secret}`);
    const params = new URL(out).searchParams;
    expect(params.get("sslmode")).toBe("require");
    expect(params.get("application_name")).toBe("gcs");
    for (const name of ["password", "sslpassword", "sslkey", "PassWord", "api_key", "auth_token", "client_secret"]) expect(params.getAll(name)).toEqual(["redacted"]);
  });

  it("shows nothing of a string it cannot parse", () => {
    expect(redactUrl("postgresql://gcs:s3cret@[bad/gcs")).toBe("(unparseable url)");
  });
});

describe("redactUrlsIn", () => {
  it("redacts each URL in a message and leaves the words around it", () => {
    const text = 'connect failed for postgresql://u:pw1@h/db?sslpassword=pw2 and "postgres://v:pw3@h2/db", giving up';
    const out = redactUrlsIn(text);
    expect(out).toBe('connect failed for postgresql://u:redacted@h/db?sslpassword=redacted and "postgres://v:redacted@h2/db", giving up');
  });
});
