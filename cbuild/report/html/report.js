/* The page of an instrbudget HTML report: renders the JSON in #instrbudget-data with the
 * bundled d3, d3-flame-graph and Chart.js. Two kinds: "results" (one session's tests) and
 * "history" (metrics over the commits of a baseline). */
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("instrbudget-data").textContent);
  const app = document.getElementById("app");
  const FAILING = new Set(["over limit", "regressed", "error"]);  // metric statuses drawn red in a failing test

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "on") for (const [type, fn] of Object.entries(value)) node.addEventListener(type, fn);
      else if (value !== null && value !== undefined && value !== false) node.setAttribute(key, value);
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }
  // Axis labels level, with room between them: Chart.js leaves out every other one where they would touch.
  const LEVEL_TICKS = { autoSkip: true, autoSkipPadding: 12, maxRotation: 0 };
  const fmt = (n) => (n === null || n === undefined ? "" : Number(n).toLocaleString("en-US"));
  const pct = (c) => (c === null || c === undefined || c === 0 ? "" : (c > 0 ? "+" : "") + c.toFixed(2) + "%");
  // "over limit (partial)" -> status-over; "not measured" and "not comparable" by both words.
  const statusClass = (s) => "status-" + (s.startsWith("not ") ? s.split(" ").slice(0, 2).join("-") : s.split(" ")[0]).replace(/[^a-z-]/g, "");

  /* A table whose columns sort on a click on their header (numbers by value). */
  function sortable(table) {
    const headers = table.tHead.rows[0].cells;
    Array.from(headers).forEach((th, column) => {
      th.addEventListener("click", () => {
        const descending = th.dataset.sort !== "desc";
        Array.from(headers).forEach((h) => delete h.dataset.sort);
        th.dataset.sort = descending ? "desc" : "asc";
        const rows = Array.from(table.tBodies[0].rows);
        const key = (row) => {
          const cell = row.cells[column];
          return cell.dataset.value !== undefined ? Number(cell.dataset.value) : cell.textContent;
        };
        rows.sort((a, b) => {
          const x = key(a), y = key(b);
          const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
          return descending ? -order : order;
        });
        table.tBodies[0].append(...rows);
      });
    });
  }

  function header(subtitle) {
    app.append(el("header", {}, el("h1", {}, data.title), el("p", { class: "subtitle" }, subtitle)));
  }

  /* ---------- results ---------- */

  function results() {
    const tests = data.tests;
    const counts = {};
    for (const t of tests) counts[t.status] = (counts[t.status] || 0) + 1;
    header(
      `${tests.length} test(s): ` +
        Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(", ") +
        ` · baseline ${data.baseline} · ${data.fingerprint_text}`
    );
    const filter = el("input", { id: "filter", type: "search", placeholder: "filter tests", "aria-label": "filter tests" });
    const statuses = ["all", "failed", "changed", ...Object.keys(counts)];
    const which = el("select", { id: "status-filter", "aria-label": "status" }, statuses.map((s) => el("option", { value: s }, s)));
    app.append(el("div", { class: "controls" }, filter, which));

    const head = el("tr", {}, el("th", {}, "test"));
    for (const m of data.metrics) head.append(el("th", { class: "num" }, m), el("th", { class: "num" }, "change"));
    head.append(el("th", {}, "status"), el("th", {}, "outcome"));
    const body = el("tbody");
    for (const t of tests) {
      const row = el("tr", {
        "data-nodeid": t.nodeid, "data-status": t.status, "data-outcome": t.outcome || "",
        "data-failing": t.failing ? "1" : null, class: t.notable ? "notable" : null,
      });
      row.append(el("td", { class: "test" }, t.nodeid));
      for (const name of data.metrics) {
        const m = t.metrics[name];
        const shown = m ? (m.value === null ? "-" : fmt(m.value)) : t.unavailable && t.unavailable[name] ? "unavailable" : "";
        row.append(
          el("td", { class: "num", "data-value": m && m.value !== null ? m.value : -1 }, shown),
          el("td", { class: "num " + (m && m.change > 0 ? "worse" : m && m.change < 0 ? "better" : ""), "data-value": m && m.change !== null ? m.change : 0 }, m ? pct(m.change) : "")
        );
      }
      row.append(
        el("td", { class: statusClass(t.status) }, t.status),
        el("td", { class: "outcome", title: t.reason || null }, t.outcome || "")
      );
      row.addEventListener("click", () => show(t.nodeid));
      body.append(row);
    }
    const table = el("table", { id: "summary" }, el("thead", {}, head), body);
    app.append(el("div", { class: "table-wrap" }, table));
    sortable(table);

    const apply = () => {
      const text = filter.value.toLowerCase();
      for (const row of body.rows) {
        const s = row.dataset.status;
        const status = which.value;
        const okStatus =
          status === "all" || s === status || (status === "failed" && row.dataset.failing) || (status === "changed" && row.classList.contains("notable"));
        row.hidden = !(okStatus && row.dataset.nodeid.toLowerCase().includes(text));
      }
    };
    filter.addEventListener("input", apply);
    which.addEventListener("change", apply);

    const details = el("section", { id: "details" });
    app.append(details);
    const byId = new Map(tests.map((t) => [t.nodeid, t]));

    function show(nodeid) {
      const t = byId.get(nodeid);
      if (!t) return;
      for (const row of body.rows) row.classList.toggle("selected", row.dataset.nodeid === nodeid);
      history.replaceState(null, "", "#test=" + encodeURIComponent(nodeid));
      details.replaceChildren(el("h2", {}, t.nodeid, " ", el("span", { class: "badge " + statusClass(t.status) }, t.status)));
      if (t.outcome) details.append(el("p", { class: "note outcome" }, `pytest: ${t.outcome}` + (t.reason ? ` (${t.reason})` : "")));
      const charts = el("div", { class: "charts" });
      if (Object.keys(t.metrics).length) details.append(el("h3", {}, "Metrics against limit and baseline"), charts);
      for (const [name, m] of Object.entries(t.metrics)) {
        const canvas = el("canvas", { "aria-label": name + " chart" });
        charts.append(el("figure", { class: "metric" }, el("figcaption", {}, `${name}: ${m.value === null ? "-" : fmt(m.value)} ${pct(m.change)}`), canvas));
        const labels = [], values = [], colours = [];
        if (m.baseline !== null) labels.push("baseline"), values.push(m.baseline), colours.push("#9aa5b1");
        labels.push("now"), values.push(m.value), colours.push(t.failing && FAILING.has(m.status) ? "#d64545" : "#3b82c4");
        if (m.limit !== null) labels.push("limit"), values.push(m.limit), colours.push("#e0b341");
        new Chart(canvas, {
          type: "bar",
          data: { labels, datasets: [{ label: name, data: values, backgroundColor: colours }] },
          options: { animation: false, indexAxis: "y", plugins: { legend: { display: false } }, scales: { x: { beginAtZero: true, ticks: LEVEL_TICKS } } },
        });
      }
      const flames = Object.keys(t.flames || {});
      if (flames.length) {
        const pick = el("select", { id: "flame-metric", "aria-label": "flame graph metric" }, flames.map((m) => el("option", { value: m }, m)));
        const note = el("p", { class: "note" }, t.has_baseline
          ? "Call paths, width = cost. Red: the path's cost, its callees' included, grew against the baseline, blue: it fell, the deeper the larger the change is next to its cost (a function's change is shared among its paths)."
          : "Call paths, width = cost. No baseline to compare with.");
        const holder = el("div", { id: "flame" });
        const info = el("div", { id: "flame-details", class: "note" });
        details.append(el("h3", {}, "Flame graph ", pick), note, holder, info);
        const draw = () => {
          holder.replaceChildren();
          const chart = flamegraph.default()
            .transitionDuration(0)
            .width(Math.max(holder.clientWidth, 600))
            .cellHeight(18)
            .selfValue(true)
            .minFrameSize(2)
            .setDetailsElement(info)
            .label((d) => `${d.data.name}: ${fmt(d.value)} (own ${fmt(d.data.value)})` + (d.delta ? `, ${d.delta > 0 ? "+" : ""}${fmt(d.delta)} against the baseline` : ""));
          if (t.has_baseline) chart.computeDelta(true).setColorMapper(flamegraph.colorMapper.differentialColorMapper);
          d3.select(holder).datum(t.flames[pick.value]).call(chart);
        };
        pick.addEventListener("change", draw);
        draw();
      } else if (t.no_flames) {
        details.append(el("p", { class: "note", id: "no-flame" }, "No flame graph: " + t.no_flames + "."));
      }
      if (t.failure) details.append(el("details", { class: "failure" }, el("summary", {}, "Failure message"), el("pre", {}, t.failure)));
      const regions = Object.entries(t.regions || {});
      if (regions.length) {
        const rows = [];
        for (const [metric, per] of regions) {
          for (const [path, value] of Object.entries(per)) {
            const limit = (t.region_limits[metric] || {})[path];
            rows.push(el("tr", {}, el("td", {}, path), el("td", {}, metric), el("td", { class: "num", "data-value": value }, fmt(value)), el("td", { class: "num" }, fmt(limit))));
          }
        }
        const regionTable = el("table", { class: "regions" }, el("thead", {}, el("tr", {}, el("th", {}, "region"), el("th", {}, "metric"), el("th", { class: "num" }, "cost"), el("th", { class: "num" }, "limit"))), el("tbody", {}, rows));
        details.append(el("h3", {}, "Regions"), regionTable);
        sortable(regionTable);
      }
      const functions = Object.entries(t.functions || {});
      if (functions.length) {
        const rows = [];
        for (const [metric, list] of functions) {
          for (const [name, value, old] of list) {
            rows.push(el("tr", {}, el("td", { class: "test" }, name), el("td", {}, metric), el("td", { class: "num", "data-value": value }, fmt(value)), el("td", { class: "num", "data-value": old === null ? -1 : old }, fmt(old))));
          }
        }
        const table = el("table", { class: "functions" }, el("thead", {}, el("tr", {}, el("th", {}, "function"), el("th", {}, "metric"), el("th", { class: "num" }, "own cost"), el("th", { class: "num" }, "baseline"))), el("tbody", {}, rows));
        details.append(el("h3", {}, "Costliest functions"), table);
        sortable(table);
      }
    }

    const wanted = new URLSearchParams(location.hash.slice(1)).get("test");
    const first = (wanted && byId.has(wanted) && wanted) ||
      (tests.find((t) => t.failing) || tests.find((t) => t.notable) || tests[0] || {}).nodeid;
    if (first) show(first);
  }

  /* ---------- history ---------- */

  function historyPage() {
    const commits = new Map(data.commits.map((c) => [c.short, c]));
    header(
      `${data.series.length} series from ${data.commits_seen} commit(s) of ${data.baseline}` +
        (data.shallow ? " · shallow clone: older commits were not fetched" : "") +
        (data.unreadable.length ? ` · ${data.unreadable.length} version(s) could not be read` : "")
    );
    const filter = el("input", { id: "filter", type: "search", placeholder: "filter tests", "aria-label": "filter tests" });
    app.append(el("div", { class: "controls" }, filter));
    const grid = el("div", { class: "series", id: "series" });
    app.append(grid);
    const palette = ["#3b82c4", "#e07b39", "#4c9f70", "#9b59b6", "#c0392b"];
    const observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (entry.isIntersecting && !entry.target.dataset.drawn) {
          entry.target.dataset.drawn = "1";
          draw(entry.target, entry.target._series);
        }
      }
    });
    function draw(card, s) {
      const labels = [];
      for (const seg of s.segments) for (const p of seg.points) labels.push(p.commit);
      let at = 0;
      const datasets = s.segments.map((seg, i) => {
        const values = new Array(labels.length).fill(null);
        for (const p of seg.points) values[at++] = p.value;
        const changed = seg.changed && seg.changed.length ? ` (after a change of ${seg.changed.join(", ")})` : "";
        return { label: `segment ${i + 1}${changed}`, data: values, borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length], spanGaps: false, stepped: true };
      });
      new Chart(card.querySelector("canvas"), {
        type: "line",
        data: { labels, datasets },
        options: {
          animation: false,
          plugins: {
            legend: { display: datasets.length > 1 },
            tooltip: {
              callbacks: {
                title: (items) => {
                  const c = commits.get(items[0].label);
                  return c ? `${c.short} ${c.date}` : items[0].label;
                },
                afterTitle: (items) => (commits.get(items[0].label) || {}).subject || "",
                label: (item) => `${s.metric}: ${fmt(item.raw)}`,
              },
            },
          },
          scales: { x: { ticks: LEVEL_TICKS }, y: { beginAtZero: false } },
        },
      });
    }
    for (const s of data.series) {
      const notes = [];
      for (const r of s.renamed_from || []) notes.push(`renamed from ${r.test} in ${r.commit}`);
      if (s.removed_in) notes.push(`removed in ${s.removed_in}`);
      if (s.segments.length > 1) notes.push("models or toolchain changed: segments not joined");
      const card = el("figure", { class: "history", "data-test": s.test },
        el("figcaption", {}, el("span", { class: "test" }, s.test), " ", el("span", { class: "metric" }, s.metric),
          notes.length ? el("span", { class: "note" }, " · " + notes.join(" · ")) : null),
        el("canvas", { "aria-label": `${s.test} ${s.metric}` }));
      card._series = s;
      grid.append(card);
      observer.observe(card);
    }
    filter.addEventListener("input", () => {
      const text = filter.value.toLowerCase();
      for (const card of grid.children) card.hidden = !card.dataset.test.toLowerCase().includes(text);
    });
  }

  if (data.kind === "results") results();
  else historyPage();
  document.body.dataset.ready = "1";
})();
