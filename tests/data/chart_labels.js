/* Test-only: appended to a copy of a report page, after its own scripts. Once the page has drawn
 * its charts (a second after it loaded, and then as long as their number still changes, for at
 * most three seconds more: a loaded machine draws late), measures every axis label Chart.js drew
 * (text, font, position, rotation) and writes the pairs of labels whose boxes overlap, and the
 * labels drawn outside their canvas, into <pre id="label-check"> as JSON for the test to read from
 * the dumped DOM. */
function instrbudgetCheckLabels() {
  "use strict";
  function corners(item, ctx) {
    ctx.font = item.font.string;
    const lines = Array.isArray(item.label) ? item.label : [item.label];
    const w = Math.max(...lines.map((l) => ctx.measureText(String(l)).width));
    const h = item.font.lineHeight * lines.length;
    const o = item.options;  // Chart.js 4: where the label is drawn, and how
    const [x0, y0] = o.translation;
    const align = o.textAlign, base = o.textBaseline || "middle";
    const left = align === "right" ? -w : align === "center" ? -w / 2 : 0;
    const top = (base === "bottom" ? -h : base === "middle" ? -h / 2 : 0) + (item.textOffset || 0);
    const c = Math.cos(o.rotation), s = Math.sin(o.rotation);
    return [[left, top], [left + w, top], [left + w, top + h], [left, top + h]].map(([x, y]) => [x0 + x * c - y * s, y0 + x * s + y * c]);
  }
  function separated(a, b) {
    for (const poly of [a, b]) {
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4];
        const nx = y2 - y1, ny = x1 - x2;
        const pa = a.map(([x, y]) => x * nx + y * ny), pb = b.map(([x, y]) => x * nx + y * ny);
        if (Math.max(...pa) <= Math.min(...pb) + 0.5 || Math.max(...pb) <= Math.min(...pa) + 0.5) return true;
      }
    }
    return false;
  }
  const report = { charts: 0, labels: 0, overlaps: [], outside: [] };
  for (const chart of Object.values(Chart.instances)) {
    report.charts++;
    const ctx = chart.ctx;
    const name = chart.canvas.getAttribute("aria-label");
    for (const scale of Object.values(chart.scales)) {
      const items = scale.getLabelItems ? scale.getLabelItems(chart.chartArea) : scale._labelItems || [];
      const boxes = items.map((item) => ({ text: String(item.label), box: corners(item, ctx) }));
      report.labels += boxes.length;
      for (let i = 0; i < boxes.length; i++) {
        for (const [x, y] of boxes[i].box) {
          if (x < -0.5 || y < -0.5 || x > chart.width + 0.5 || y > chart.height + 0.5) {
            report.outside.push([name, scale.id, boxes[i].text]);
            break;
          }
        }
        for (let j = i + 1; j < boxes.length; j++) {
          if (!separated(boxes[i].box, boxes[j].box)) report.overlaps.push([name, scale.id, boxes[i].text, boxes[j].text]);
        }
      }
    }
  }
  const out = document.createElement("pre");
  out.id = "label-check";
  out.textContent = JSON.stringify(report);
  document.body.append(out);
}

(function () {
  "use strict";
  let seen = -1, waited = 0;
  function settle() {
    const now = Object.keys(Chart.instances).length;
    if ((now === 0 || now !== seen) && waited < 3000) {
      seen = now;
      waited += 250;
      setTimeout(settle, 250);
      return;
    }
    instrbudgetCheckLabels();
  }
  setTimeout(settle, 1000);
})();
