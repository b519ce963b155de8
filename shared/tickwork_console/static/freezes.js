// Freezes (docs/operations.md#freezes): active and upcoming ones (and those ended within a day), freezing jobs by
// tags, ids or all, and lifting one early.
import { html, useState } from "./vendor/htm-preact-standalone.module.js";
import { del, enc, get, post } from "./api.js";
import { Field, FieldError, errorsFor, fieldErrorsOf, formError, parseTags, tagsText } from "./forms.js";
import { JobLink } from "./names.js";
import { Cell, ConfirmDialog, ErrorBox, Loading, Time, ZoneLabel, instant, useLoad, useTimeZone } from "./ui.js";

const SELECTORS = [
  ["tags", "Jobs with tags"],
  ["job_ids", "Jobs by id"],
  ["all", "All my jobs"],
];

// Where a freeze stands now: lifted early, ended, active, or upcoming.
export function freezeState(freeze, now = Date.now()) {
  if (freeze.lifted_at && new Date(freeze.lifted_at).getTime() <= now) return "lifted";
  if (new Date(freeze.until).getTime() <= now) return "ended";
  return new Date(freeze.from).getTime() <= now ? "active" : "upcoming";
}

function SelectorText({ selector }) {
  if (selector.all) return "all jobs";
  if (selector.tags) return html`tags <span class="mono">${tagsText(selector.tags)}</span>`;
  return html`${selector.job_ids.map((id, i) => html`${i ? ", " : ""}<${JobLink} id=${id} />`)}`;
}

export function FreezesPage() {
  const freezes = useLoad(() => get("/v1/freezes"), [], 10000);
  const [lifting, setLifting] = useState(null);
  const [notice, setNotice] = useState(null);
  const items = freezes.data ? freezes.data.items : [];
  return html`<section>
    <h1 tabindex="-1">Freezes</h1>
    <p class="muted">A freeze stops the jobs it selects for a while: an occurrence inside it is skipped (recorded SKIPPED freeze), or with "runs at its end", held until it ends or is lifted. Ended freezes stay listed for a day.</p>
    <${NewFreeze} onCreated=${(freeze) => { setNotice(html`Froze <${SelectorText} selector=${freeze.selector} /> until <${Time} value=${freeze.until} />.`); freezes.reload(); }} />
    <div aria-live="polite">${notice ? html`<p class="notice">${notice}</p>` : null}</div>
    <${ErrorBox} error=${freezes.error} />
    ${freezes.data
      ? html`<table class="list">
          <caption class="visually-hidden">Freezes, newest first</caption>
          <thead><tr><th>State</th><th>Selects</th><th>From <${ZoneLabel} /></th><th>Until <${ZoneLabel} /></th><th>Reason</th><th>Blocked runs</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            ${items.length === 0
              ? html`<tr><td colspan="7" class="muted">Nothing is frozen.</td></tr>`
              : items.map((f) => {
                  const state = freezeState(f);
                  return html`<tr>
                    <${Cell} label="State"><span class=${`status freeze-${state}`}>${state}</span>${f.tenant === "*" ? html` <span class="tag">every tenant</span>` : null}<//>
                    <${Cell} label="Selects"><${SelectorText} selector=${f.selector} /><//>
                    <${Cell} label="From"><${Time} value=${f.from} /><//>
                    <${Cell} label="Until"><${Time} value=${f.lifted_at || f.until} />${f.lifted_at ? html` <span class="muted">lifted by ${f.lifted_by || "—"}</span>` : null}<//>
                    <${Cell} label="Reason">${f.reason}<//>
                    <${Cell} label="Blocked runs">${f.on_blocked === "DEFER" ? "run at its end" : "skipped"}<//>
                    <${Cell} label="Actions">${state === "active" || state === "upcoming"
                      ? html`<button type="button" onClick=${() => setLifting(f)} aria-label=${`Lift the freeze: ${f.reason}`}>Lift</button>`
                      : null}<//>
                  </tr>`;
                })}
          </tbody>
        </table>`
      : freezes.error
        ? null
        : html`<${Loading} what="freezes" />`}
    <${ConfirmDialog}
      open=${lifting !== null}
      title="Lift this freeze?"
      confirmLabel="Lift"
      onConfirm=${async () => { await del(`/v1/freezes/${enc(lifting.id)}`); setNotice(`Lifted: ${lifting.reason}.`); freezes.reload(); }}
      onClose=${() => setLifting(null)}
    >
      ${lifting ? html`<p>"${lifting.reason}" ends now: the jobs it selects run again from their next occurrence${lifting.on_blocked === "DEFER" ? ", and the runs it held run now" : ""}.</p>` : null}
    <//>
  </section>`;
}

function NewFreeze({ onCreated }) {
  const { zone } = useTimeZone();
  const [kind, setKind] = useState("tags");
  const [selected, setSelected] = useState("");
  const [minutes, setMinutes] = useState("60");
  const [from, setFrom] = useState("");
  const [reason, setReason] = useState("");
  const [onBlocked, setOnBlocked] = useState("SKIP");
  const [errors, setErrors] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    let selector = { all: true };
    const local = [];
    if (kind === "tags") {
      const tags = parseTags(selected);
      if (tags.errors.length || !Object.keys(tags.value || {}).length)
        local.push({ field: "selector.tags", message: "give at least one key=value" });
      selector = { tags: tags.value };
    } else if (kind === "job_ids") {
      const ids = selected.split(/[\s,]+/).filter(Boolean);
      if (!ids.length) local.push({ field: "selector.job_ids", message: "give at least one job id" });
      selector = { job_ids: ids };
    }
    setErrors(local);
    if (local.length) {
      setError(formError(local));
      return;
    }
    const body = { selector, for_seconds: Math.round(Number(minutes) * 60), reason: reason.trim(), on_blocked: onBlocked };
    if (from.trim()) body.from = instant(from.trim(), zone);
    setBusy(true);
    try {
      const freeze = await post("/v1/freezes", body);
      setReason("");
      onCreated(freeze);
    } catch (err) {
      setErrors(fieldErrorsOf(err));
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<details class="new-freeze">
    <summary>New freeze</summary>
    <form class="job-form" onSubmit=${submit} aria-label="New freeze" novalidate>
      <div class="field">
        <label for="freeze-kind">Freeze</label>
        <select id="freeze-kind" value=${kind} onChange=${(e) => setKind(e.currentTarget.value)}>
          ${SELECTORS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
        </select>
      </div>
      ${kind === "all"
        ? null
        : html`<${Field}
            label=${kind === "tags" ? "Tags (key=value, every one)" : "Job ids"}
            field=${kind === "tags" ? "selector.tags" : "selector.job_ids"}
            errors=${errors}
            value=${selected}
            onInput=${setSelected}
            placeholder=${kind === "tags" ? "team=payments" : "j01..."}
          />`}
      <${Field} label="For (minutes)" field="for_seconds" errors=${errors} value=${minutes} onInput=${setMinutes} type="number" min="1" />
      <${Field} label=${`From (${zone}, default now)`} field="from" errors=${errors} value=${from} onInput=${setFrom} type="datetime-local" step="1" />
      <${Field} label="Reason" field="reason" errors=${errors} value=${reason} onInput=${setReason} />
      <div class="field">
        <label for="freeze-on-blocked">Occurrences it blocks</label>
        <select id="freeze-on-blocked" value=${onBlocked} onChange=${(e) => setOnBlocked(e.currentTarget.value)}>
          <option value="SKIP">are skipped (SKIPPED freeze)</option>
          <option value="DEFER">run at its end</option>
        </select>
        <${FieldError} errors=${errorsFor(errors, "on_blocked")} />
      </div>
      <${ErrorBox} error=${error} />
      <div class="actions"><button type="submit" class="primary" disabled=${busy}>Freeze</button></div>
    </form>
  </details>`;
}
