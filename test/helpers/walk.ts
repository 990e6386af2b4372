import type { TestApp } from "./app";

export interface KeysetPage<T> {
  data: T[];
  next_cursor: string | null;
  has_more: boolean;
}

/** Follows next_cursor to the end; returns every row and the number of pages. */
export async function walk<T = { id: string }>(
  t: TestApp,
  path: string,
  token: string,
  between?: (page: number) => Promise<void>,
): Promise<{ rows: T[]; pages: number }> {
  const rows: T[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const url: string = cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path;
    const res = await t.api.get(url).set("Authorization", `Bearer ${token}`);
    if (res.status !== 200) throw new Error(`${url} → ${res.status} ${JSON.stringify(res.body)}`);
    const page = res.body as KeysetPage<T>;
    expect(Object.keys(page).sort()).toEqual(["data", "has_more", "next_cursor"]);
    expect(page.has_more).toBe(page.next_cursor !== null);
    rows.push(...page.data);
    cursor = page.next_cursor;
    pages++;
    if (between) await between(pages);
  } while (cursor);
  return { rows, pages };
}
