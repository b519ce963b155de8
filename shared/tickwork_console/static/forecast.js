// A job's forecast (docs/forecasts.md) on its page: its durations and success from its recent runs, its next run's
// outlook, and advice on its timeout; and a run's outlook and warnings on the run's page.
import { html } from "./vendor/htm-preact-standalone.module.js";
import { Time, duration } from "./ui.js";

const percent = (p) => `${Math.round(p * 1000) / 10}%`;

export function JobForecastFacts({ job }) {
  const f = job.forecast;
  if (!f) return html`<dt>Forecast</dt><dd class="muted">after 20 runs</dd>`;
  const next = f.next_run;
  const advice = f.timeout_advice;
  return html`
    <dt>Forecast</dt>
    <dd data-testid="forecast">p50 ${duration(f.p50_ms)}, p95 ${duration(f.p95_ms)}, p99 ${duration(f.p99_ms)}; succeeds ${percent(f.p_success)} <span class="muted">(${f.runs} runs, recent ones weigh more)</span></dd>
    ${next
      ? html`<dt>Next run</dt>
          <dd data-testid="next-run-forecast">expected to end <${Time} value=${next.expected_end_at} />, ${percent(next.p_success)} likely to succeed${next.deadline_at_risk ? html` <strong class="warning">Deadline at risk</strong>` : null}</dd>`
      : null}
    ${advice
      ? html`<dt>Timeout advice</dt>
          <dd data-testid="timeout-advice" class="warning">${advice.verdict === "too_long" ? "Too long" : "Too short"}: suggested ${advice.suggested_seconds} s <span class="muted">(${advice.reason})</span></dd>`
      : null}`;
}

export function RunForecastFacts({ run }) {
  if (!run.expected_end_at && !run.deadline_at_risk_at && !run.slow_at) return null;
  return html`
    ${run.expected_end_at
      ? html`<dt>Expected end</dt><dd><${Time} value=${run.expected_end_at} /> <span class="muted">${percent(run.p_success)} likely to succeed</span></dd>`
      : null}
    ${run.deadline_at_risk_at ? html`<dt>Deadline at risk</dt><dd class="warning">since <${Time} value=${run.deadline_at_risk_at} /> (its start plus the p95 passes its deadline)</dd>` : null}
    ${run.slow_at ? html`<dt>Slow</dt><dd class="warning">past its job's p99 × the slow factor (<${Time} value=${run.slow_at} />)</dd>` : null}`;
}
