// Live charts of GET /v1/metrics, refreshed every 5 s, drawn by uPlot.
import { html, useEffect, useRef, useState } from "./vendor/htm-preact-standalone.module.js";
import uPlot from "./vendor/uPlot.esm.js";
import { get } from "./api.js";
import { ErrorBox, duration, useLoad, when } from "./ui.js";

const REFRESH_MS = 5000;
// The figures a tenant may see; the rest are system-wide (queues, executors, tick), an admin's.
const TENANT_NAMES = ["lateness_p50", "lateness_p99", "runs_succeeded", "runs_failed", "runs_skipped", "runs_deferred", "failure_rate", "retries"];

const CHARTS = [
  { id: "lateness", title: "Start lateness", names: ["lateness_p50", "lateness_p99"], format: (v) => duration(v) },
  { id: "runs", title: "Runs per minute by outcome", names: ["runs_succeeded", "runs_failed", "runs_skipped", "runs_deferred"], perMinute: true },
  { id: "failure-rate", title: "Failure rate", names: ["failure_rate"], format: (v) => `${v.toFixed(1)} %` },
  { id: "retries", title: "Retries", names: ["retries"] },
  { id: "queue-depth", title: "Queue depth (messages visible)", names: ["queue_depth"] },
  { id: "queue-age", title: "Oldest message age (queue lag)", names: ["queue_oldest_age"], format: (v) => duration(v * 1000) },
  { id: "utilisation", title: "Executor utilisation (in flight / allowed)", names: ["executor_utilisation"], format: (v) => `${v.toFixed(0)} %` },
  { id: "tick-lag", title: "Tick dispatch lag", names: ["tick_dispatch_lag"], format: (v) => duration(v) },
];

// Calm, distinguishable colours (Okabe-Ito), the same series the same colour on every refresh.
const PALETTE = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#6b6b6b", "#a6761d"];

const WINDOWS = [
  { label: "15 min", seconds: 900, period: 60 },
  { label: "1 h", seconds: 3600, period: 60 },
  { label: "6 h", seconds: 21600, period: 300 },
  { label: "24 h", seconds: 86400, period: 900 },
];

function seriesLabel(series) {
  const dims = Object.entries(series.dimensions || {}).map(([k, v]) => `${k} ${v}`);
  return dims.length ? `${series.label} · ${dims.join(", ")}` : series.label;
}

function lastValue(values) {
  for (let i = values.length - 1; i >= 0; i -= 1) if (values[i] !== null && values[i] !== undefined) return values[i];
  return null;
}

// The y axis as wide as its longest label ("1 min 40 s"), measured in the axis's font, so no label is cut.
function labelsWidth(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx];
  if (cycleNum > 1 && axis._size) return axis._size;
  const longest = (values || []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), "");
  u.ctx.font = axis.font[0];
  return Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / devicePixelRatio + 4);
}

function Chart({ chart, series, period }) {
  const box = useRef(null);
  const plot = useRef(null);
  const [width, setWidth] = useState(600);
  const scale = chart.perMinute ? 60 / period : 1;
  const labels = series.map(seriesLabel);
  const xs = series.length ? series[0].timestamps.map((t) => Date.parse(t) / 1000) : [];
  const data = [xs, ...series.map((s) => s.values.map((v) => (v === null ? null : v * scale)))];
  const drawn = data.slice(1).flat().filter((v) => v !== null);
  const points = drawn.length;
  const highest = points ? Math.max(...drawn) : null;
  const signature = labels.join("|");
  const format = chart.format || ((v) => (Number.isInteger(v) ? String(v) : v.toFixed(2)));

  useEffect(() => {
    const observer = new ResizeObserver((entries) => setWidth(Math.max(240, Math.floor(entries[0].contentRect.width))));
    observer.observe(box.current);
    return () => observer.disconnect();
  }, []);
  useEffect(() => {
    if (plot.current) plot.current.destroy();
    plot.current = null;
    if (!series.length) return undefined;
    plot.current = new uPlot(
      {
        width,
        height: 180,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true } },
        // The axis in UTC, as every other time in the console.
        tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC"),
        axes: [
          { stroke: "#5b6470", grid: { stroke: "#eceff3" } },
          { stroke: "#5b6470", grid: { stroke: "#eceff3" }, size: labelsWidth, values: (u, ticks) => ticks.map((t) => format(t)) },
        ],
        // Points always: a minute with figures between empty minutes has no line to draw, only its point.
        series: [{}, ...labels.map((label, i) => ({ label, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: false, points: { show: true, size: 5, fill: PALETTE[i % PALETTE.length] } }))],
      },
      data,
      box.current,
    );
    return () => {
      if (plot.current) plot.current.destroy();
      plot.current = null;
    };
  }, [signature, width]);
  useEffect(() => {
    if (plot.current) plot.current.setData(data);
  });

  return html`<figure class="chart" id=${`chart-${chart.id}`} data-points=${points} data-max=${highest === null ? "" : highest}>
    <figcaption><h2>${chart.title}</h2></figcaption>
    <div class="chart-canvas" ref=${box} aria-hidden="true"></div>
    ${series.length === 0 ? html`<p class="muted">No figures for this chart.</p>` : null}
    <ul class="legend" aria-label=${`${chart.title}, latest values`}>
      ${series.map((s, i) => {
        const latest = lastValue(s.values);
        return html`<li>
          <span class="swatch" style=${`background:${PALETTE[i % PALETTE.length]}`}></span>
          <span>${labels[i]}</span>
          <strong class="latest">${latest === null ? "no data" : format(latest * scale)}</strong>
        </li>`;
      })}
    </ul>
  </figure>`;
}

export function MetricsPage() {
  const [windowIndex, setWindowIndex] = useState(1);
  const [band, setBand] = useState("");
  const [restricted, setRestricted] = useState(false);
  const chosen = WINDOWS[windowIndex];
  const load = async () => {
    const end = new Date();
    const start = new Date(end.getTime() - chosen.seconds * 1000);
    const query = { period: chosen.period, start: start.toISOString(), end: end.toISOString(), band };
    try {
      return await get("/v1/metrics", restricted ? { ...query, names: TENANT_NAMES.join(",") } : query);
    } catch (err) {
      // A tenant may not see system-wide figures: show its own rather than nothing.
      if (err.status === 403 && !restricted) {
        setRestricted(true);
        return get("/v1/metrics", { ...query, names: TENANT_NAMES.join(",") });
      }
      throw err;
    }
  };
  const metrics = useLoad(load, [windowIndex, band, restricted], REFRESH_MS);
  const all = metrics.data ? metrics.data.series : [];
  return html`<section>
    <h1 tabindex="-1">Metrics</h1>
    <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Chart options">
      <label>Window
        <select value=${windowIndex} onChange=${(e) => setWindowIndex(Number(e.currentTarget.value))}>
          ${WINDOWS.map((w, i) => html`<option value=${i}>${w.label}</option>`)}
        </select>
      </label>
      <label>Band
        <select value=${band} onChange=${(e) => setBand(e.currentTarget.value)}>
          <option value="">all, and by band</option><option value="high">high</option><option value="normal">normal</option><option value="low">low</option>
        </select>
      </label>
      <span class="muted" aria-live="polite">${metrics.data ? `Updated ${when(new Date().toISOString()).slice(11)} UTC, every 5 s` : ""}</span>
    </form>
    ${restricted ? html`<p class="muted">Showing your tenant's figures; queue, executor and tick figures are an admin's.</p>` : null}
    <${ErrorBox} error=${metrics.error} />
    ${metrics.data
      ? html`<div class="charts">
          ${CHARTS.map((chart) => html`<${Chart} key=${chart.id} chart=${chart} period=${metrics.data.period} series=${all.filter((s) => chart.names.includes(s.name))} />`)}
        </div>`
      : metrics.error
        ? null
        : html`<p class="muted">Loading metrics…</p>`}
  </section>`;
}
