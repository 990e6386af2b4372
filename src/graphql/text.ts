// Text and JSON the database can hold. PostgreSQL text and jsonb cannot contain U+0000, and a lone UTF-16
// surrogate ("\ud800", legal in JSON, meaningless in UTF-8) makes Prisma's query engine fail: either
// reaching a query is a server error. Input is checked here, before any query, so the caller gets a
// 400 naming what to fix (REST parameters and bodies in api/params.ts, /graphql variables and
// literals in graphql/input-guard.ts, MCP arguments through the REST parsers).

// With the u flag a surrogate pair is one code point, so \p{Cs} matches lone surrogates only.
const UNSTORABLE = /\u0000|\p{Cs}/u;

export const isStorableText = (text: string): boolean => !UNSTORABLE.test(text);

/**
 * Where in a JSON-like value the first unstorable text sits, as a path from `root` ("filter.email",
 * "filter_doc.and[2].value"), in a member name or a string value; undefined when there is none.
 * Walks with its own stack, so a body nested thousands of levels deep cannot overflow the call stack.
 */
export function unstorablePath(value: unknown, root: string): string | undefined {
  const pending: [unknown, string][] = [[value, root]];
  while (pending.length > 0) {
    const [node, path] = pending.pop()!;
    if (typeof node === "string") {
      if (!isStorableText(node)) return path;
    } else if (Array.isArray(node)) {
      node.forEach((item, i) => pending.push([item, `${path}[${i}]`]));
    } else if (typeof node === "object" && node !== null) {
      for (const [key, item] of Object.entries(node)) {
        const at = path ? `${path}.${key}` : key;
        if (!isStorableText(key)) return at;
        pending.push([item, at]);
      }
    }
  }
  return undefined;
}

/** The detail of the 400 for unstorable text at `path` (shown with the offending characters escaped). */
export function unstorableDetail(path: string): string {
  const shown = path.replace(/\u0000|\p{Cs}/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return `${shown} must be text without NUL characters (U+0000) or lone UTF-16 surrogates`;
}

/**
 * How deep a JSON-like value nests: a scalar is 0, `{}` or `[]` 1, `{"a": []}` 2. Prisma's query
 * engine cannot take JSON nested past 128 levels (a server error), so stored JSON is held to less.
 * Walks with its own stack, like unstorablePath.
 */
export function jsonDepth(value: unknown): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!;
    if (typeof node !== "object" || node === null) continue;
    deepest = Math.max(deepest, depth + 1);
    for (const item of Array.isArray(node) ? node : Object.values(node)) pending.push([item, depth + 1]);
  }
  return deepest;
}
