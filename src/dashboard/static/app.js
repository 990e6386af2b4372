// The dashboard's page script: signs in with a pasted API key (kept in sessionStorage, this tab
// only), sends only the documents of /dashboard/documents.json (the trusted-documents file) to
// /graphql, and draws the group overview with uPlot. No other origin is contacted.
"use strict";
(function () {
  const KEY = "gcs.dashboard.key";
  const $ = (id) => document.getElementById(id);
  const fmt = (n) => Number(n).toLocaleString("en");
  const money = (minor, currency) => `${(Number(minor) / 100).toLocaleString("en", { minimumFractionDigits: 2, maximumFractionDigits: 2 })} ${currency}`;
  const COLORS = ["#2f6fed", "#e8710a", "#1e8e3e", "#a142f4", "#d93025", "#12b5cb"];

  let documents = null;
  async function documentNamed(name) {
    if (!documents) {
      const res = await fetch("/dashboard/documents.json");
      documents = Object.values(await res.json());
    }
    const doc = documents.find((d) => new RegExp(`^\\s*(query|subscription) ${name}\\b`, "m").test(d));
    if (!doc) throw new Error(`no trusted document ${name}`);
    return doc;
  }

  async function graphql(name, variables) {
    const key = sessionStorage.getItem(KEY);
    const res = await fetch("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: await documentNamed(name), variables }),
    });
    const body = await res.json();
    if (body.errors && body.errors.length) {
      const e = body.errors[0];
      throw new Error(`${(e.extensions && e.extensions.code) || res.status}: ${e.message}`);
    }
    return body.data;
  }

  const day = (d) => d.toISOString().slice(0, 10);
  /** The last twelve whole months and the current one: arrivals, and reviews published, over the same span. */
  function period() {
    const now = new Date();
    const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 12, 1));
    const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0));
    return { from: day(from), to: day(to), reviewsFrom: from.toISOString() };
  }

  /** The first day of every month from `from` to `to`: the x axis every monthly chart shares. */
  function monthsOf(from, to) {
    const months = [];
    for (let d = new Date(`${from}T00:00:00Z`); day(d) <= to; d = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1))) months.push(day(d));
    return months;
  }

  /** Cells of text into a row: data from source systems is never parsed as HTML. */
  function textCells(tr, values) {
    for (const value of values) {
      const td = document.createElement("td");
      td.textContent = value == null ? "–" : String(value);
      tr.appendChild(td);
    }
    return tr;
  }

  /** Property names by id, from the overview; the live events show names, not ids. */
  const propertyNames = new Map();

  const toSeconds = (date) => Date.parse(`${date}T00:00:00Z`) / 1000;

  /**
   * A uPlot chart of one x axis (months) and a series per name; records its points for tests. A
   * series may name its own y scale (`scale`, with `options.scales[scale]` its range and side), so
   * measures of different units never share an axis.
   */
  function chart(id, title, xs, series, options = {}) {
    const el = $(id);
    el.replaceChildren();
    el.dataset.points = String(series.reduce((n, s) => n + s.values.filter((v) => v != null).length, 0));
    el.dataset.series = JSON.stringify(series.map((s) => ({ label: s.label, values: s.values, scale: s.scale || "y" })));
    el.dataset.x = JSON.stringify(xs);
    const extra = options.scales || {};
    const yAxes = Object.keys(extra).length
      ? Object.entries(extra).map(([scale, s]) => ({ scale, side: s.side, label: s.label, grid: { show: s.side === 3 } }))
      : [{}];
    const opts = {
      title,
      width: Math.max(el.clientWidth - 16, 320),
      height: 240,
      scales: {
        x: options.time === false ? { time: false, range: [-0.5, xs.length - 0.5] } : { time: true },
        ...Object.fromEntries(Object.entries(extra).map(([scale, s]) => [scale, s.range ? { range: s.range } : {}])),
      },
      axes: [options.time === false ? { splits: () => xs, values: (_, ticks) => ticks.map((t) => options.labels[t] ?? "") } : {}, ...yAxes],
      series: [{}, ...series.map((s, i) => ({ label: s.label, scale: s.scale || "y", stroke: COLORS[i % COLORS.length], fill: options.bars ? COLORS[i % COLORS.length] + "99" : undefined, paths: options.bars ? uPlot.paths.bars({ size: [0.35, 50], align: i === 0 ? -1 : 1 }) : undefined, points: { show: true } }))],
    };
    new uPlot(opts, [xs, ...series.map((s) => s.values)], el);
  }

  function render(d, p) {
    const names = new Map(d.properties.map((x) => [x.id, x.name]));
    for (const [id, name] of names) propertyNames.set(id, name);
    $("scope").textContent = d.viewer.propertyId ? `Property: ${names.get(d.viewer.propertyId) || d.viewer.propertyId}` : `The whole group (${d.properties.length} properties)`;
    const t = d.totals[0];
    $("kpi-stays").textContent = fmt(t.stays);
    $("kpi-nights").textContent = fmt(t.nights);
    $("kpi-distinct-guests").textContent = fmt(t.distinctGuests);
    // Returning: first stay in the group before the period (docs/aggregates.md).
    $("kpi-returning-guests").textContent = fmt(t.returningGuests);
    $("kpi-repeat-rate").textContent = t.repeatRate == null ? "–" : `${(t.repeatRate * 100).toFixed(1)}%`;
    const g = d.guests[0];
    $("kpi-guests").textContent = fmt(g.guests);
    $("kpi-reach-email").textContent = fmt(g.reachableByEmail);
    $("kpi-reach-sms").textContent = fmt(g.reachableBySms);
    $("kpi-revenue").replaceChildren();
    for (const m of t.revenue) {
      const li = document.createElement("li");
      li.dataset.currency = m.currency;
      li.dataset.revenueMinor = String(m.revenueMinor);
      li.textContent = `Revenue ${money(m.revenueMinor, m.currency)} · ADR ${m.averageDailyRateMinor == null ? "–" : money(m.averageDailyRateMinor, m.currency)}`;
      $("kpi-revenue").appendChild(li);
    }

    // Stays and revenue by month per property, every month of the period on the x axis.
    const months = monthsOf(p.from, p.to);
    const properties = [...new Set(d.stays.map((b) => b.propertyId))];
    // A property in scope with no stay arriving in the period has no line: say so, by name.
    const inScope = d.viewer.propertyId ? [d.viewer.propertyId] : d.properties.map((x) => x.id);
    const uncharted = inScope.filter((id) => !properties.includes(id)).map((id) => names.get(id) || id);
    $("uncharted").hidden = uncharted.length === 0;
    $("uncharted").textContent = uncharted.length
      ? `Not charted: ${uncharted.join(", ")}, with no stay arriving in this period (dining, spa and event bookings are not stays).`
      : "";
    const at = (p, m) => d.stays.find((b) => b.propertyId === p && b.period === m);
    const xs = months.map(toSeconds);
    chart("chart-stays", "Stays", xs, properties.map((p) => ({ label: names.get(p) || p, values: months.map((m) => (at(p, m) ? at(p, m).stays : null)) })));
    const revenueSeries = [];
    for (const p of properties) {
      const currencies = [...new Set(d.stays.filter((b) => b.propertyId === p).flatMap((b) => b.revenue.map((r) => r.currency)))];
      for (const c of currencies) {
        revenueSeries.push({ label: `${names.get(p) || p} (${c})`, values: months.map((m) => { const r = at(p, m) && at(p, m).revenue.find((x) => x.currency === c); return r ? Number(r.revenueMinor) / 100 : null; }) });
      }
    }
    chart("chart-revenue", "Revenue (major units, per currency)", xs, revenueSeries);

    // Reachability by consent purpose.
    const purposes = [["email_marketing", d.email[0]], ["sms_marketing", d.sms[0]]];
    const tbody = $("consent-table").querySelector("tbody");
    tbody.replaceChildren();
    for (const [purpose, c] of purposes) {
      const tr = document.createElement("tr");
      tr.dataset.purpose = purpose;
      tbody.appendChild(textCells(tr, [purpose, c.granted, c.withdrawn, c.denied, c.unknown]));
    }
    // Grouped bars: one x per status, the e-mail purpose's bar left of it and the SMS purpose's right.
    const statuses = ["granted", "withdrawn", "denied", "unknown"];
    chart("chart-consent", "Contact points by effective consent", [0, 1, 2, 3], purposes.map(([purpose, c]) => ({ label: purpose, values: statuses.map((x) => c[x]) })), {
      time: false,
      bars: true,
      labels: Object.fromEntries(statuses.map((x, i) => [i, x])),
    });

    // Rating trend over the same months: the average (1–5) on its own axis, the review count on another.
    const rating = (m) => d.ratings.find((b) => b.period === m);
    chart("chart-ratings", "Average rating and reviews by month", xs, [
      { label: "average rating", scale: "rating", values: months.map((m) => (rating(m) ? rating(m).averageRating : null)) },
      { label: "reviews", scale: "count", values: months.map((m) => (rating(m) ? rating(m).count : null)) },
    ], { scales: { rating: { range: [1, 5], side: 3, label: "average rating (1–5)" }, count: { range: (_u, _min, max) => [0, Math.max(1, max)], side: 1, label: "reviews" } } });

    // Destination bindings with their lag.
    const bindings = $("bindings").querySelector("tbody");
    bindings.replaceChildren();
    for (const table of d.tables.nodes) {
      for (const b of table.bindings) bindings.appendChild(textCells(document.createElement("tr"), [table.name, b.provider, b.state, b.lag]));
    }
  }

  /** Rows of text cells into a table body (text, never HTML: the data comes from source systems). */
  function rows(tableId, list) {
    const tbody = $(tableId).querySelector("tbody");
    tbody.replaceChildren();
    for (const cells of list) tbody.appendChild(textCells(document.createElement("tr"), cells));
  }

  async function search(query) {
    const started = performance.now();
    delete document.body.dataset.searched;
    const data = await graphql("DashboardGuestSearch", { query });
    const list = $("candidates");
    list.replaceChildren();
    for (const c of data.guestSearch.candidates) {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "candidate";
      button.textContent = `${c.name || "(no name)"} · ${c.emails.join(", ")} · ${c.properties.join(", ")}`;
      button.addEventListener("click", () => person(c.masterProfileId ? { masterProfileId: c.masterProfileId } : { guestProfileId: c.guestProfileIds[0] }));
      li.appendChild(button);
      list.appendChild(li);
    }
    document.body.dataset.searched = String(Math.round(performance.now() - started));
  }

  /** Events by when they happened, newest first; the later recorded first among equals. */
  const newestFirst = (events) =>
    [...events].sort((a, b) => (a.occurredAt === b.occurredAt ? Number(b.seq) - Number(a.seq) : a.occurredAt < b.occurredAt ? 1 : -1));

  async function person(variables) {
    delete document.body.dataset.person;
    const d = await graphql("DashboardGuest", variables);
    const p = d.person;
    $("person").hidden = false;
    $("person-name").textContent = `${[p.identity.givenName, p.identity.familyName].filter(Boolean).join(" ") || "(no name)"}${p.identity.vip ? " · VIP" : ""}`;
    $("person-ids").textContent = p.masterProfileId ? `Master profile ${p.masterProfileId}` : `Guest profile ${p.guestProfileIds[0]} (no master profile)`;
    rows("profiles", p.identity.profiles.map((x) => [x.property, x.source, x.sourceId, x.guestProfileId]));
    $("stays-summary").textContent = `${p.stays.count} stays, ${p.stays.nights} nights; last ${p.stays.lastStay || "–"}, next ${p.stays.nextStay || "–"}`;
    rows("reservations", d.reservations.nodes.map((r) => [r.confirmationNumber, r.kind, r.status, r.arrivalDate, r.nights, r.property.name, money(r.totalAmountMinor, r.currency)]));
    rows("spend", p.spend.byCurrency.flatMap((c) => c.byCategory.map((x) => [c.currency, x.category, money(x.amountMinor, c.currency), x.transactions])));
    rows("consent", p.consent.effective.map((c) => [c.contactValue, c.purpose, c.status,
      c.decidedBy ? `${c.decidedBy.status} via ${c.decidedBy.channel} from ${c.decidedBy.source} at ${c.decidedBy.property || "the group"}, ${c.decidedBy.observedAt}` : "no observation"]));
    // The log answers in the order events were recorded, oldest first: read it all, then show the
    // 50 that happened last, newest first (by when they happened; the log's order breaks ties).
    let events = d.events.nodes;
    for (let cursor = d.events.nextCursor; cursor; ) {
      const page = (await graphql("DashboardGuestEvents", { ...variables, cursor })).events;
      events = events.concat(page.nodes);
      cursor = page.nextCursor;
    }
    rows("timeline", newestFirst(events).slice(0, 50).map((e) => [e.seq, e.occurredAt, e.entityType, e.operation]));
    document.body.dataset.person = p.masterProfileId || p.guestProfileIds[0];
  }

  // Live events: one subscription (graphql-sse, distinct connections mode) while the page shows.
  // On a broken stream it subscribes again after the last cursor it saw: no gap, no duplicate.
  const LIVE_ROWS = 200;
  let live = null;
  function startLive() {
    if (live || !sessionStorage.getItem(KEY)) return;
    const state = { cursor: null, stopped: false, dispose: () => {} };
    live = state;
    const client = graphqlSse.createClient({
      url: "/graphql/stream",
      headers: () => ({ authorization: `Bearer ${sessionStorage.getItem(KEY)}` }),
      retryAttempts: 0,
    });
    const subscribe = async () => {
      if (state.stopped) return;
      const query = await documentNamed("DashboardLiveEvents");
      $("live-state").textContent = "connecting…";
      state.dispose = client.subscribe(
        { query, variables: { after: state.cursor } },
        {
          next: (result) => {
            if (result.errors && result.errors.length) return fail(new Error(`${result.errors[0].extensions && result.errors[0].extensions.code}: ${result.errors[0].message}`));
            const item = result.data.events;
            state.cursor = item.cursor;
            const e = item.node;
            const tbody = $("live-events").querySelector("tbody");
            const tr = document.createElement("tr");
            tr.dataset.seq = e.seq;
            tr.dataset.property = e.propertyId || "";
            tr.dataset.entity = e.entityId;
            // Names, not ids: the property by its name, the entity by its type (its id in the tooltip).
            const property = e.propertyId ? propertyNames.get(e.propertyId) || "another property" : "the group";
            textCells(tr, [e.seq, e.recordedAt, e.entityType, e.operation, property]);
            tr.children[2].title = e.entityId;
            tbody.insertBefore(tr, tbody.firstChild);
            $("live-hint").hidden = true;
            while (tbody.children.length > LIVE_ROWS) tbody.removeChild(tbody.lastChild);
          },
          error: (err) => {
            delete document.body.dataset.live;
            // A refusal (401, 403, a bad document) is said; a dropped stream or a full cap is retried.
            const res = err && err.response;
            if (res && res.status >= 400 && res.status < 500 && res.status !== 429) {
              $("live-state").textContent = "refused";
              res.json().then((b) => fail(new Error(`${b.errors[0].extensions.code}: ${b.errors[0].message}`)), () => fail(err));
              return;
            }
            $("live-state").textContent = "reconnecting…";
            setTimeout(subscribe, 2000);
          },
          complete: () => {
            if (!state.stopped) setTimeout(subscribe, 2000);
          },
        },
        {
          connected: () => {
            $("live-state").textContent = "live";
            document.body.dataset.live = "connected";
          },
        },
      );
    };
    subscribe().catch(fail);
  }
  function stopLive() {
    if (!live) return;
    live.stopped = true;
    live.dispose();
    live = null;
    delete document.body.dataset.live;
  }

  function show() {
    const guest = location.hash === "#guest";
    const liveShown = location.hash === "#live";
    $("guest360").hidden = !guest;
    $("live").hidden = !liveShown;
    $("overview").hidden = guest || liveShown || !document.body.dataset.ready;
    if (liveShown) startLive();
    else stopLive();
  }
  window.addEventListener("hashchange", show);
  $("guest-search").addEventListener("submit", (e) => {
    e.preventDefault();
    search($("guest-query").value).catch(fail);
  });
  function fail(err) {
    $("status").className = "error";
    $("status").textContent = String(err.message || err);
    document.body.dataset.failed = "true";
  }

  async function load() {
    const started = performance.now();
    $("status").className = "";
    $("status").textContent = "Loading…";
    try {
      const p = period();
      document.body.dataset.variables = JSON.stringify(p);
      const data = await graphql("DashboardOverview", p);
      $("period").textContent = `arrivals ${p.from} – ${p.to}`;
      $("overview").hidden = false;
      render(data, p);
      $("status").textContent = "";
      document.body.dataset.ready = String(Math.round(performance.now() - started));
      show();
    } catch (err) {
      fail(err);
    }
  }

  /** Signed in: only "Sign out" shows; signed out: only the key field and "Sign in". */
  function showSignedIn(on) {
    $("sign-in-fields").hidden = on;
    $("sign-out").hidden = !on;
  }
  $("sign-in").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, $("api-key").value.trim());
    $("api-key").value = "";
    showSignedIn(true);
    load();
  });
  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    location.reload();
  });
  if (sessionStorage.getItem(KEY)) {
    showSignedIn(true);
    load();
  }
})();
