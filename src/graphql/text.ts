// Text the database can hold. PostgreSQL text and jsonb cannot contain U+0000: a NUL byte reaching a
// query fails it with a server error. Input is checked here, before any query, so the caller gets a
// 400 naming what to fix (REST parameters in rest/params.ts, /graphql variables and literals in
// graphql/input-guard.ts, MCP arguments through the REST parsers).

export const hasNul = (text: string): boolean => text.includes("\u0000");

/**
 * Where in a JSON-like value the first NUL sits, as a path from `root` ("filter.email",
 * "filter_doc.and[2]"), in a member name or a string value; undefined when there is none. Walks
 * with its own stack, so a body nested thousands of levels deep cannot overflow the call stack.
 */
export function nulPath(value: unknown, root: string): string | undefined {
  const pending: [unknown, string][] = [[value, root]];
  while (pending.length > 0) {
    const [node, path] = pending.pop()!;
    if (typeof node === "string") {
      if (hasNul(node)) return path;
    } else if (Array.isArray(node)) {
      node.forEach((item, i) => pending.push([item, `${path}[${i}]`]));
    } else if (typeof node === "object" && node !== null) {
      for (const [key, item] of Object.entries(node)) {
        const at = path ? `${path}.${key}` : key;
        if (hasNul(key)) return at;
        pending.push([item, at]);
      }
    }
  }
  return undefined;
}

/** The detail of the 400 for a NUL found at `path`. */
export const nulDetail = (path: string) => `${path.replaceAll("\u0000", "\\u0000")} must not contain a NUL character (U+0000)`;
