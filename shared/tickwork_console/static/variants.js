// A job's variants (docs/versions.md): each one's share, runs, success rate, duration p50/p95, attempts and cost
// per run over the last 24 hours (GET /v1/jobs/{id}/variants), promote and roll back, and the last rollback's why.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { enc, get, post } from "./api.js";
import { ErrorBox, Time, duration, useLoad } from "./ui.js";

const WINDOWS = ["1h", "24h", "7d", "30d"];

function percent(rate) {
  return rate === null || rate === undefined ? "—" : `${(rate * 100).toFixed(1)} %`;
}

function VariantRow({ v, onAct }) {
  const baseline = v.name === "baseline";
  return html`<tr>
    <td class="mono">${v.name}</td>
    <td>${v.weight} %</td>
    <td>${v.runs}</td>
    <td>${percent(v.success_rate)}</td>
    <td>${v.duration_p50_ms === null ? "—" : duration(v.duration_p50_ms)}</td>
    <td>${v.duration_p95_ms === null ? "—" : duration(v.duration_p95_ms)}</td>
    <td>${v.attempts_per_run === null ? "—" : v.attempts_per_run}</td>
    <td>${v.cost_per_run_usd === null ? "—" : `$${v.cost_per_run_usd.toFixed(8)}`}</td>
    <td>
      ${baseline || !v.weight
        ? null
        : html`<button type="button" onClick=${() => onAct("promote", v.name)}>Promote</button>
            <button type="button" class="danger" onClick=${() => onAct("rollback", v.name)}>Roll back</button>`}
    </td>
  </tr>`;
}

export function VariantsPanel({ job, onChanged }) {
  const [span, setSpan] = useState("24h");
  const stats = useLoad(() => get(`/v1/jobs/${enc(job.id)}/variants`, { window: span }), [job.id, job.version, span], 30000);
  const [error, setError] = useState(null);
  const act = async (action, name) => {
    setError(null);
    try {
      await post(`/v1/jobs/${enc(job.id)}/variants/${enc(name)}/${action}`);
      onChanged();
    } catch (err) {
      setError(err);
    }
  };
  const rollback = job.variant_rollback;
  return html`<section aria-labelledby="variants-title">
    <h2 id="variants-title">Variants</h2>
    <label>Window <select value=${span} onChange=${(e) => setSpan(e.target.value)}>
      ${WINDOWS.map((w) => html`<option value=${w}>${w}</option>`)}
    </select></label>
    <${ErrorBox} error=${stats.error || error} />
    ${stats.data
      ? html`<table aria-label="Variants">
            <thead><tr>
              <th>Variant</th><th>Share</th><th>Runs</th><th>Success</th><th>p50</th><th>p95</th>
              <th>Attempts / run</th><th>Cost / run</th><th></th>
            </tr></thead>
            <tbody>${stats.data.variants.map((v) => html`<${VariantRow} key=${v.name} v=${v} onAct=${act} />`)}</tbody>
          </table>
          <p class="muted">
            The guard rolls a variant back when its failure rate is above the baseline's by more than
            ${stats.data.guard.margin * 100} points, judged every ${stats.data.guard.min_runs} of its runs.
            ${stats.data.truncated ? ` Of the latest ${stats.data.runs_read} runs only.` : ""}
          </p>`
      : null}
    ${rollback
      ? html`<p class="notice">Rolled back: <span class="mono">${rollback.variant}</span> by ${rollback.by},
          <${Time} value=${rollback.at} />: ${rollback.reason}</p>`
      : null}
  </section>`;
}
