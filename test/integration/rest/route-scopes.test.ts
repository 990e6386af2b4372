// Every route of the route table, from the table itself: a credential lacking the route's scope gets
// 403 forbidden naming it, and one holding it does not (so no route forgets its scope check).
import { createApiKey } from "../../../src/auth/credentials";
import { ALL_SCOPES } from "../../../src/auth/scopes";
import { routes, type RouteSpec } from "../../../src/api/routes";
import { startTestApp, type TestApp } from "../../helpers/app";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** A request to the route with valid placeholders for its path parameters and body. */
function call(route: RouteSpec, token: string) {
  const path = route.path.replace(/:(\w+)/g, (_, name) => (name === "provider" ? "mailchimp" : t.manifest.groups.A.tables.bound));
  const req = route.method === "GET" ? t.api.get(path) : route.method === "DELETE" ? t.api.delete(path) : t.api.post(path);
  req.set("Authorization", `Bearer ${token}`);
  return route.body ? req.send({ member_type: "guest_profile", filter_doc: { field: "email", op: "exists", value: true } }) : req;
}

describe.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))("%s", (_name, route) => {
  it(`403 forbidden with scope ${route.scope} without it; not 403 with it`, async () => {
    const A = t.manifest.groups.A;
    const without = await createApiKey(t.admin, { propertyGroupId: A.id, name: "without", scopes: ALL_SCOPES.filter((s) => s !== route.scope) });
    const denied = await call(route, without.token);
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ error: "forbidden", scope: route.scope });

    const granted = await call(route, A.credentials.session_token);
    expect(granted.status).not.toBe(403);
    expect(granted.status).toBeLessThan(500);
  });
});
