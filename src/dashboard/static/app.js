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
  /** The last twelve whole months and the current one, by arrival date. */
  function period() {
    const now = new Date();
    const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 12, 1));
    const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0));
    return { from: day(from), to: day(to), reviewsFrom: new Date(Date.UTC(now.getUTCFullYear() - 2, now.getUTCMonth(), 1)).toISOString() };
  }

  const toSeconds = (date) => Date.parse(`${date}T00:00:00Z`) / 1000;

  /** A uPlot chart of one x axis (months) and a series per name; records its points for tests. */
  function chart(id, title, xs, series, options = {}) {
    const el = $(id);
    el.innerHTML = "";
    el.dataset.points = String(series.reduce((n, s) => n + s.values.filter((v) => v != null).length, 0));
    el.dataset.series = JSON.stringify(series.map((s) => ({ label: s.label, values: s.values })));
    el.dataset.x = JSON.stringify(xs);
    const opts = {
      title,
      width: Math.max(el.clientWidth - 16, 320),
      height: 240,
      scales: { x: options.time === false ? { time: false, range: [-0.5, xs.length - 0.5] } : { time: true } },
      axes: options.time === false ? [{ splits: () => xs, values: (_, ticks) => ticks.map((t) => options.labels[t] ?? "") }, {}] : [{}, {}],
      series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], fill: options.bars ? COLORS[i % COLORS.length] + "99" : undefined, paths: options.bars ? uPlot.paths.bars({ size: [0.35, 50], align: i === 0 ? -1 : 1 }) : undefined, points: { show: true } }))],
    };
    new uPlot(opts, [xs, ...series.map((s) => s.values)], el);
  }

  function render(d) {
    const names = new Map(d.properties.map((p) => [p.id, p.name]));
    $("scope").textContent = d.viewer.propertyId ? `Property: ${names.get(d.viewer.propertyId) || d.viewer.propertyId}` : `The whole group (${d.properties.length} properties)`;
    const t = d.totals[0];
    $("kpi-stays").textContent = fmt(t.stays);
    $("kpi-nights").textContent = fmt(t.nights);
    $("kpi-distinct-guests").textContent = fmt(t.distinctGuests);
    const g = d.guests[0];
    $("kpi-guests").textContent = fmt(g.guests);
    $("kpi-reach-email").textContent = fmt(g.reachableByEmail);
    $("kpi-reach-sms").textContent = fmt(g.reachableBySms);
    $("kpi-revenue").innerHTML = "";
    for (const m of t.revenue) {
      const li = document.createElement("li");
      li.dataset.currency = m.currency;
      li.dataset.revenueMinor = String(m.revenueMinor);
      li.textContent = `Revenue ${money(m.revenueMinor, m.currency)} · ADR ${m.averageDailyRateMinor == null ? "–" : money(m.averageDailyRateMinor, m.currency)}`;
      $("kpi-revenue").appendChild(li);
    }

    // Stays and revenue by month per property.
    const months = [...new Set(d.stays.map((b) => b.period))].sort();
    const properties = [...new Set(d.stays.map((b) => b.propertyId))];
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
    tbody.innerHTML = "";
    for (const [purpose, c] of purposes) {
      const tr = document.createElement("tr");
      tr.dataset.purpose = purpose;
      tr.innerHTML = `<td>${purpose}</td><td>${c.granted}</td><td>${c.withdrawn}</td><td>${c.denied}</td><td>${c.unknown}</td>`;
      tbody.appendChild(tr);
    }
    // Grouped bars: one x per status, the e-mail purpose's bar left of it and the SMS purpose's right.
    const statuses = ["granted", "withdrawn", "denied", "unknown"];
    chart("chart-consent", "Contact points by effective consent", [0, 1, 2, 3], purposes.map(([purpose, c]) => ({ label: purpose, values: statuses.map((x) => c[x]) })), {
      time: false,
      bars: true,
      labels: Object.fromEntries(statuses.map((x, i) => [i, x])),
    });

    // Rating trend.
    chart("chart-ratings", "Average rating by month", d.ratings.map((b) => toSeconds(b.period)), [
      { label: "average rating", values: d.ratings.map((b) => b.averageRating) },
      { label: "reviews", values: d.ratings.map((b) => b.count) },
    ]);

    // Destination bindings with their lag.
    const bindings = $("bindings").querySelector("tbody");
    bindings.innerHTML = "";
    for (const table of d.tables.nodes) {
      for (const b of table.bindings) {
        const tr = document.createElement("tr");
        tr.innerHTML = `<td></td><td>${b.provider}</td><td>${b.state}</td><td>${b.lag}</td>`;
        tr.firstChild.textContent = table.name;
        bindings.appendChild(tr);
      }
    }
  }

  /** Rows of text cells into a table body (text, never HTML: the data comes from source systems). */
  function rows(tableId, list) {
    const tbody = $(tableId).querySelector("tbody");
    tbody.innerHTML = "";
    for (const cells of list) {
      const tr = document.createElement("tr");
      for (const cell of cells) {
        const td = document.createElement("td");
        td.textContent = cell == null ? "–" : String(cell);
        tr.appendChild(td);
      }
      tbody.appendChild(tr);
    }
  }

  async function search(query) {
    const started = performance.now();
    delete document.body.dataset.searched;
    const data = await graphql("DashboardGuestSearch", { query });
    const list = $("candidates");
    list.innerHTML = "";
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
    rows("timeline", d.events.nodes.map((e) => [e.seq, e.occurredAt, e.entityType, e.operation]));
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
            for (const cell of [e.seq, e.recordedAt, `${e.entityType} ${e.entityId}`, e.operation, e.propertyId || "–"]) {
              const td = document.createElement("td");
              td.textContent = cell;
              tr.appendChild(td);
            }
            tbody.insertBefore(tr, tbody.firstChild);
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
      render(data);
      $("status").textContent = "";
      document.body.dataset.ready = String(Math.round(performance.now() - started));
      show();
    } catch (err) {
      fail(err);
    }
  }

  $("sign-in").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, $("api-key").value.trim());
    $("api-key").value = "";
    $("sign-out").hidden = false;
    load();
  });
  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    location.reload();
  });
  if (sessionStorage.getItem(KEY)) {
    $("sign-out").hidden = false;
    load();
  }
})();
