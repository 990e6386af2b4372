// Connection strings as they may appear in a log line or on stderr: the one place their credentials
// are removed. A PostgreSQL URL carries secrets in its userinfo password and in query parameters
// (libpq's `password`, `sslpassword` for the client key's passphrase, and whatever a driver or proxy
// adds under a name like `api_key` or `auth_token`). No imports: the CLI loads it before anything else.

/** Parameter names whose value is (or may be) a credential; `sslkey` names a file, redacted all the same. */
const CREDENTIAL_PARAMETER = /pass|secret|token|key|credential|auth/i;
const REDACTED = "redacted";

/** `url` with its password and every credential-bearing query parameter replaced by "redacted". */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "(unparseable url)";
  }
  if (u.password) u.password = REDACTED;
  for (const name of new Set(u.searchParams.keys())) {
    if (CREDENTIAL_PARAMETER.test(name)) u.searchParams.set(name, REDACTED);
  }
  return u.toString();
}

/** Text (an error message) with every postgres:// or postgresql:// URL in it redacted as above. */
export function redactUrlsIn(text: string): string {
  return text.replace(/postgres(?:ql)?:\/\/[^\s"'<>]+/gi, (match) => redactUrl(match));
}
