// The data layer: one module per model or family, each owning its tenant predicate (data/tenant.ts),
// columns, row type, page and batch reads. Code above it (resolvers, loaders) calls these functions
// and never sees Prisma or SQL; whether a function reads through Prisma or SQL is its own detail.
// One handle per request, bound to the caller's scope; modules are made on first use.
import type { Scope } from "./scope";
import type { Database } from "../db/database";
import { consents } from "./consents";
import { destinations } from "./destinations";
import { engagement } from "./engagement";
import { events } from "./events";
import { guests } from "./guests";
import { loyalty } from "./loyalty";
import { masterProfiles } from "./master-profiles";
import { masterProfileLinks } from "./master-profile-links";
import { people } from "./people";
import { metrics } from "./metrics";
import { properties } from "./properties";
import { createReaders, type Readers } from "./readers";
import { search } from "./search";
import { stays } from "./stays";
import { tables } from "./tables";
import { webhooks } from "./webhooks";

const MODULES = { guests, masterProfiles, masterProfileLinks, stays, consents, engagement, loyalty, properties, events, tables, destinations, search, metrics, webhooks, people };
type Modules = typeof MODULES;

export type Data = { readonly [K in keyof Modules]: ReturnType<Modules[K]> };

/** Getters on a prototype: a request pays only for the modules it uses. */
class RequestData {
  private readonly made = new Map<keyof Modules, unknown>();
  constructor(private readonly readers: Readers) {}
  private module<K extends keyof Modules>(name: K): ReturnType<Modules[K]> {
    let made = this.made.get(name);
    if (made === undefined) this.made.set(name, (made = MODULES[name](this.readers)));
    return made as ReturnType<Modules[K]>;
  }
  get guests() { return this.module("guests"); }
  get masterProfiles() { return this.module("masterProfiles"); }
  get masterProfileLinks() { return this.module("masterProfileLinks"); }
  get stays() { return this.module("stays"); }
  get consents() { return this.module("consents"); }
  get engagement() { return this.module("engagement"); }
  get loyalty() { return this.module("loyalty"); }
  get properties() { return this.module("properties"); }
  get events() { return this.module("events"); }
  get tables() { return this.module("tables"); }
  get destinations() { return this.module("destinations"); }
  get search() { return this.module("search"); }
  get metrics() { return this.module("metrics"); }
  get webhooks() { return this.module("webhooks"); }
  get people() { return this.module("people"); }
}

export function createData(db: Database, scope: Scope): Data {
  return new RequestData(createReaders(db, scope));
}
