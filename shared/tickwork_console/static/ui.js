// Pieces every page uses: loading data, showing an API error as its text, a confirmation dialog, formatting.
import { createContext, html, useCallback, useContext, useEffect, useRef, useState } from "./vendor/htm-preact-standalone.module.js";

// Loads `load()` now, again when `deps` change, and every `refreshMs` if given. Keeps the last data while a
// refresh is in flight, so a page does not flicker.
export function useLoad(load, deps, refreshMs) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    try {
      const data = await load();
      if (mine === generation.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === generation.current) setState((s) => ({ data: s.data, error, loading: false }));
    }
  }, deps);
  useEffect(() => {
    setState({ data: null, error: null, loading: true });
    reload();
  }, [reload]);
  // Apart from the load, so a page can slow its refresh (a run that ended) without blanking what it shows.
  useEffect(() => {
    if (!refreshMs) return undefined;
    const timer = setInterval(reload, refreshMs);
    return () => clearInterval(timer);
  }, [reload, refreshMs]);
  return { ...state, reload };
}

// Every `activeMs` while `active(data)` holds (a run in flight), else every `idleMs`: an ended run, left open
// all day, costs one call every `idleMs`, not one every 2 s.
export function useLoadWhile(load, deps, active, activeMs, idleMs) {
  const [refreshMs, setRefreshMs] = useState(activeMs);
  const loaded = useLoad(load, deps, refreshMs);
  const busy = loaded.data ? active(loaded.data) : true;
  useEffect(() => setRefreshMs(busy ? activeMs : idleMs), [busy]);
  return loaded;
}

// An API error as the problem's text: title, detail, and each field error.
export function ErrorBox({ error }) {
  if (!error) return null;
  const problem = error.problem || { title: "Something went wrong", detail: String(error.message || error) };
  return html`<div class="error" role="alert">
    <p class="error-title">${problem.status || error.status ? `${problem.status || error.status} · ` : ""}${problem.title}</p>
    ${problem.detail && !(problem.errors || []).length ? html`<p class="error-detail">${problem.detail}</p>` : null}
    ${(problem.errors || []).length
      ? html`<ul class="error-fields">
          ${problem.errors.map((e) => html`<li><code>${e.field}</code> ${e.message}</li>`)}
        </ul>`
      : null}
  </div>`;
}

export function Loading({ what }) {
  return html`<p class="muted" aria-live="polite">Loading ${what}…</p>`;
}

let dialogCount = 0;

// A modal <dialog>: the browser makes the rest of the page inert (focus stays inside) and closes it on Escape.
export function ConfirmDialog({ open, title, children, confirmLabel, danger, onConfirm, onClose }) {
  const ref = useRef(null);
  // Its own heading id: a page may hold several dialogs, each named by its title.
  const titleId = useRef(`dialog-title-${++dialogCount}`).current;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      setError(null);
      dialog.showModal();
    } else if (!open && dialog.open) dialog.close();
  }, [open]);
  const confirm = async (event) => {
    event.preventDefault();
    setBusy(true);
    try {
      await onConfirm();
      onClose();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  // Tab and Shift-Tab cycle within the dialog: a modal makes the page inert, but Tab past its last control
  // would still leave the document.
  const trapTab = (event) => {
    if (event.key !== "Tab") return;
    const controls = [...ref.current.querySelectorAll("button, input, select, textarea, a[href]")].filter((c) => !c.disabled);
    if (!controls.length) return;
    const first = controls[0];
    const last = controls[controls.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  };
  return html`<dialog ref=${ref} onClose=${onClose} onKeyDown=${trapTab} aria-labelledby=${titleId}>
    <form method="dialog" onSubmit=${confirm}>
      <h2 id=${titleId}>${title}</h2>
      <div class="dialog-body">${children}</div>
      <${ErrorBox} error=${error} />
      <div class="actions">
        <button type="button" onClick=${onClose}>Cancel</button>
        <button type="submit" class=${danger ? "danger" : "primary"} disabled=${busy}>${confirmLabel}</button>
      </div>
    </form>
  </dialog>`;
}

const pad = (n, w = 2) => String(n).padStart(w, "0");

// Times are shown in UTC, as the API and the logs give them.
export function when(value, { ms = false } = {}) {
  if (!value) return "—";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  const day = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  return `${day} ${time}${ms ? `.${pad(d.getUTCMilliseconds(), 3)}` : ""}`;
}

// ---- the time zone times are shown in: UTC (the API's and the logs'), the browser's, or the job's (its schedule's
// zone, on a job's page; UTC where no one job is shown). The choice is remembered in localStorage.

const ZONE_KEY = "tickwork-time-zone";
const ZONE_CHOICES = [
  ["utc", "UTC"],
  ["browser", "this browser's"],
  ["job", "the job's"],
];
const zoneListeners = new Set();

function storedZoneChoice() {
  try {
    const stored = window.localStorage.getItem(ZONE_KEY);
    return ZONE_CHOICES.some(([choice]) => choice === stored) ? stored : "utc";
  } catch {
    return "utc"; // storage refused (a private window's policy): UTC, as before
  }
}

function chooseZone(choice) {
  try {
    window.localStorage.setItem(ZONE_KEY, choice);
  } catch {
    // not remembered; still switched for this page
  }
  zoneListeners.forEach((listener) => listener(choice));
}

export const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

// A job's page provides its schedule's zone: what "the job's" means there.
export const JobZone = createContext(null);

// The zone chosen, as an IANA name, and the choice itself; re-rendered when it is switched.
export function useTimeZone() {
  const [choice, setChoice] = useState(storedZoneChoice);
  const jobZone = useContext(JobZone);
  useEffect(() => {
    zoneListeners.add(setChoice);
    return () => zoneListeners.delete(setChoice);
  }, []);
  const zone = choice === "browser" ? browserZone() : choice === "job" ? jobZone || "UTC" : "UTC";
  return { choice, zone };
}

// `value` as a wall time in `zone`, YYYY-MM-DD HH:MM:SS, with its offset (GMT+2) unless the zone is UTC.
export function whenIn(value, zone, { ms = false } = {}) {
  if (zone === "UTC" || !value) return when(value, { ms });
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  const parts = zoneParts(d.getTime(), zone, { timeZoneName: "shortOffset" });
  const time = `${parts.hour}:${parts.minute}:${parts.second}${ms ? `.${pad(d.getUTCMilliseconds(), 3)}` : ""}`;
  return `${parts.year}-${parts.month}-${parts.day} ${time} ${parts.timeZoneName}`;
}

// The wall clock's fields an instant (ms) shows in `zone`, as numbers: {year, month, day, hour, minute, second}.
export function wallParts(ms, zone) {
  const p = zoneParts(ms, zone);
  return { year: Number(p.year), month: Number(p.month), day: Number(p.day), hour: Number(p.hour), minute: Number(p.minute), second: Number(p.second) };
}

// The parts of `zone`'s wall clock at the instant `ms` as Intl writes them ("07"), with any `extra` fields asked.
function zoneParts(ms, zone, extra = {}) {
  const format = new Intl.DateTimeFormat("en-GB", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    ...extra,
  });
  return Object.fromEntries(format.formatToParts(new Date(ms)).map((part) => [part.type, part.value]));
}

// How far `zone`'s wall clock is ahead of UTC at the instant `ms`, in ms.
function offsetAt(ms, zone) {
  const w = wallParts(ms, zone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - Math.floor(ms / 1000) * 1000;
}

// The instant (ms) a wall time names in `zone`: its fields as if UTC, less the zone's offset there (found twice,
// as the offset at the guess may differ across a DST change). A wall time in a spring-forward gap lands past it.
export function instantOfWall(year, month, day, hour = 0, minute = 0, second = 0, zone = "UTC") {
  const asUtc = Date.UTC(year, month - 1, day, hour, minute, second);
  const guess = asUtc - offsetAt(asUtc, zone);
  return asUtc - offsetAt(guess, zone);
}

// What a heading says times are in: (UTC), or the zone's name.
export function ZoneLabel() {
  const { zone } = useTimeZone();
  return html`<span class="zone-label">(${zone})</span>`;
}

// The switch in the console's header.
export function TimeZoneSwitch() {
  const { choice, zone } = useTimeZone();
  return html`<label class="muted zone-switch">Times in
    <select aria-label="Time zone" value=${choice} onChange=${(e) => chooseZone(e.currentTarget.value)}>
      ${ZONE_CHOICES.map(([value, label]) => html`<option value=${value}>${value === "browser" ? `${label} (${browserZone()})` : label}</option>`)}
    </select>
    ${choice === "job" ? html`<span class="visually-hidden"> (${zone})</span>` : null}
  </label>`;
}

// An instant, in the zone chosen; its UTC time in the title.
export function Time({ value, ms }) {
  const { zone } = useTimeZone();
  return value
    ? html`<time datetime=${value} title=${zone === "UTC" ? undefined : `${when(value, { ms })} UTC`}>${whenIn(value, zone, { ms })}</time>`
    : html`<span class="muted">—</span>`;
}

export function duration(msValue) {
  if (msValue === null || msValue === undefined) return "—";
  const abs = Math.abs(msValue);
  if (abs < 1000) return `${Math.round(msValue)} ms`;
  if (abs < 60000) return `${(msValue / 1000).toFixed(abs < 10000 ? 2 : 1)} s`;
  if (abs < 3600000) return `${Math.floor(abs / 60000)} min ${Math.round((abs % 60000) / 1000)} s`;
  return `${(msValue / 3600000).toFixed(1)} h`;
}

// A step's offset from a reference instant: +2.98 s after it, −2.98 s before it.
export function offset(msValue) {
  return msValue < 0 ? `−${duration(-msValue)}` : `+${duration(msValue)}`;
}

export function Status({ value }) {
  return value ? html`<span class=${`status status-${String(value).toLowerCase()}`}>${value}</span>` : null;
}

// A run's last progress report (ctx.progress): a bar when it gave a fraction, and its message.
export function Progress({ progress }) {
  if (!progress) return null;
  const percent = progress.fraction === null || progress.fraction === undefined ? null : Math.round(progress.fraction * 100);
  return html`<span class="run-progress">
    ${percent === null ? null : html`<progress max="100" value=${percent} aria-label=${`${percent}% done`}>${percent}%</progress> ${percent}%`}
    ${progress.message ? html` <span class="muted">${progress.message}</span>` : null}
  </span>`;
}

// The band a priority falls in, as the API places it: high 7-9, normal 3-6, low 0-2.
export function band(priority) {
  return priority >= 7 ? "high" : priority >= 3 ? "normal" : "low";
}

export function scheduleText(schedule) {
  if (!schedule) return "—";
  const zone = schedule.timezone && schedule.timezone !== "UTC" ? ` (${schedule.timezone})` : "";
  if (schedule.at) return `once at ${when(schedule.at)} UTC`;
  if (schedule.cron) return `cron ${schedule.cron}${zone}`;
  if (schedule.rate) return `every ${schedule.rate}`;
  return JSON.stringify(schedule);
}

// A labelled cell: on a phone the table's rows become cards and each cell shows its label.
export const Cell = ({ label, children, className }) =>
  html`<td data-label=${label} class=${className || ""}>${children}</td>`;

// Previous / next through an API listing's cursors: the cursors already followed are the way back.
export function usePager(resetKey) {
  const [trail, setTrail] = useState([null]);
  useEffect(() => setTrail([null]), [resetKey]);
  const cursor = trail[trail.length - 1];
  return {
    cursor,
    page: trail.length,
    next: (nextCursor) => setTrail((t) => [...t, nextCursor]),
    previous: () => setTrail((t) => (t.length > 1 ? t.slice(0, -1) : t)),
  };
}

export function Pager({ pager, nextCursor, label }) {
  return html`<nav class="pager" aria-label=${`${label} pages`}>
    <button type="button" onClick=${pager.previous} disabled=${pager.page <= 1}>← Previous</button>
    <span class="muted">Page ${pager.page}</span>
    <button type="button" onClick=${() => pager.next(nextCursor)} disabled=${!nextCursor}>Next →</button>
  </nav>`;
}

export function navigate(hash) {
  window.location.hash = hash;
}

// A page's filters, kept in its URL (`<base>?name=value...`), so a filtered view can be bookmarked and shared: the
// filters the URL holds (each "" when absent), a key that changes with them, and the form's submit, which puts the
// form's non-empty fields in the URL.
// `instants`: the filters that are datetime-local inputs, whose wall times in `zone` the URL keeps as UTC instants
// (so a link means the same instant in every zone; the inputs show them in the zone chosen).
export function urlFilters(names, query, base, { instants = [], zone = "UTC" } = {}) {
  const filters = Object.fromEntries(names.map((name) => [name, query.get(name) || ""]));
  const apply = (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [name, value] of new FormData(event.currentTarget).entries()) {
      const text = String(value).trim();
      if (text) params.set(name, instants.includes(name) ? instant(text, zone) : text);
    }
    navigate(`${base}${params.toString() ? `?${params}` : ""}`);
  };
  return { filters, key: `${JSON.stringify(filters)} ${zone}`, apply };
}

// A <input type="datetime-local"> value is a wall time in the zone times are shown in (`zone`): the API's instant
// is its UTC ISO form. Anything else (an instant already, or a typo) is sent as it is, for the API to accept or to
// name in its 422.
export function instant(value, zone = "UTC") {
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(\.\d+)?)?$/.exec(value || "");
  if (!m) return value;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((part) => Number(part || 0));
  const fraction = m[7] ? Math.round(Number(m[7]) * 1000) : 0;
  return new Date(instantOfWall(year, month, day, hour, minute, second, zone) + fraction).toISOString();
}

// An instant (ISO, with its offset) as a datetime-local input shows it: its wall time in `zone`, to the second. ""
// for none; a value that is a wall time already (typed, or an old link's) as it is.
export function wallValue(value, zone = "UTC") {
  if (!value) return "";
  const ms = Date.parse(value);
  if (Number.isNaN(ms) || !/(Z|[+-]\d\d:?\d\d)$/i.test(value)) return value;
  const w = wallParts(ms, zone);
  return `${w.year}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}`;
}
