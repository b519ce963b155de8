// The console's shell: hash routes, the navigation, and focus moved to each page's heading.
import { html, render, useEffect, useRef, useState } from "./vendor/htm-preact-standalone.module.js";
import { tenantScope } from "./api.js";
import { AuditPage } from "./audit.js";
import { CalendarPage, CalendarsPage, EditCalendarPage, NewCalendarPage } from "./calendars.js";
import { FreezesPage } from "./freezes.js";
import { NewJobPage } from "./job_form.js";
import { JobPage, JobsPage, RunPage } from "./jobs.js";
import { MetricsPage } from "./metrics.js";
import { DlqPage } from "./ops.js";
import { RunsPage } from "./runs.js";
import { SessionStatus, SignInPage, startSession, useSession } from "./signin.js";
import { TenantSwitcher, useIsAdmin } from "./tenancy.js";
import { NewWorkflowPage } from "./workflow_form.js";
import { TimeZoneSwitch } from "./ui.js";
import { WorkflowPage, WorkflowRunPage, WorkflowsPage } from "./workflows.js";

const ROUTES = [
  [/^\/jobs\/new$/, () => html`<${NewJobPage} />`, "jobs"],
  [/^\/jobs\/([^/]+)$/, (m, query) => html`<${JobPage} id=${decodeURIComponent(m[1])} query=${query} />`, "jobs"],
  [/^\/jobs$/, (m, query) => html`<${JobsPage} query=${query} />`, "jobs"],
  [/^\/runs$/, (m, query) => html`<${RunsPage} query=${query} />`, "runs"],
  [/^\/runs\/([^/]+)$/, (m) => html`<${RunPage} id=${decodeURIComponent(m[1])} />`, "jobs"],
  [/^\/dlq$/, () => html`<${DlqPage} />`, "dlq"],
  [/^\/workflows$/, () => html`<${WorkflowsPage} />`, "workflows"],
  [/^\/workflows\/new$/, () => html`<${NewWorkflowPage} />`, "workflows"],
  [/^\/workflows\/([^/]+)$/, (m, query) => html`<${WorkflowPage} id=${decodeURIComponent(m[1])} query=${query} />`, "workflows"],
  [/^\/workflow-runs\/([^/]+)$/, (m) => html`<${WorkflowRunPage} id=${decodeURIComponent(m[1])} />`, "workflows"],
  [/^\/calendars$/, () => html`<${CalendarsPage} />`, "calendars"],
  [/^\/calendars\/new$/, () => html`<${NewCalendarPage} />`, "calendars"],
  [/^\/calendars\/([^/]+)\/edit$/, (m) => html`<${EditCalendarPage} id=${decodeURIComponent(m[1])} />`, "calendars"],
  [/^\/calendars\/([^/]+)$/, (m) => html`<${CalendarPage} id=${decodeURIComponent(m[1])} />`, "calendars"],
  [/^\/freezes$/, () => html`<${FreezesPage} />`, "freezes"],
  [/^\/metrics$/, () => html`<${MetricsPage} />`, "metrics"],
  [/^\/audit$/, (m, query) => html`<${AuditPage} query=${query} />`, "audit"],
];

const NAV = [
  ["jobs", "#/jobs", "Jobs"],
  ["runs", "#/runs", "Runs"],
  ["dlq", "#/dlq", "DLQ"],
  ["workflows", "#/workflows", "Workflows"],
  ["calendars", "#/calendars", "Calendars"],
  ["freezes", "#/freezes", "Freezes"],
  ["metrics", "#/metrics", "Metrics"],
];
// An admin's: every tenant's audit records. A tenant's own are at #/audit too, unlisted (each job's and workflow's
// Audit tab shows its records).
const ADMIN_NAV = [["audit", "#/audit", "Audit"]];

const Keyed = ({ children }) => children;

function parseHash() {
  const raw = window.location.hash.replace(/^#/, "") || "/jobs";
  const [path, search] = raw.split("?");
  return { path, query: new URLSearchParams(search || "") };
}

function App() {
  const [where, setWhere] = useState(parseHash());
  const admin = useIsAdmin();
  // Whose items the pages show (an admin's switcher): a switch loads the page again, for that tenant.
  const [scope, setScope] = useState(tenantScope());
  useEffect(() => {
    const onChange = () => setWhere(parseHash());
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  let page = null;
  let section = null;
  for (const [pattern, view, name] of ROUTES) {
    const match = where.path.match(pattern);
    if (match) {
      // Keyed by the path and the tenant: another page (another job's, another tenant's) starts afresh.
      page = html`<${Keyed} key=${`${scope}|${where.path}`}>${view(match, where.query)}<//>`;
      section = name;
      break;
    }
  }
  // Navigating to a new page moves the focus to its heading (once the page has loaded its data and drawn it), so a
  // keyboard or screen reader user starts there rather than on the link they left. The first page of a visit keeps
  // the browser's own start, where the first Tab stop is the skip link. A user who has moved the focus while the
  // page loaded (into the tenant switcher, say) keeps it: their typing and Enter go where they put them.
  const firstPath = useRef(where.path);
  useEffect(() => {
    if (where.path === firstPath.current) return undefined;
    firstPath.current = null;
    const leftOn = document.activeElement;
    let tries = 0;
    const timer = setInterval(() => {
      const heading = document.querySelector("main h1");
      tries += 1;
      if (heading || tries > 100) {
        clearInterval(timer);
        const moved = document.activeElement !== leftOn && document.activeElement !== document.body;
        if (heading && !moved) heading.focus({ preventScroll: true });
      }
    }, 20);
    return () => clearInterval(timer);
  }, [where.path]);
  return html`
    <a class="skip-link" href="#main" onClick=${(e) => { e.preventDefault(); document.getElementById("main").focus(); }}>Skip to content</a>
    <header class="top">
      <a class="brand" href="#/jobs">Tickwork</a>
      <nav aria-label="Sections">
        <ul>
          ${[...NAV, ...(admin ? ADMIN_NAV : [])].map(([name, href, label]) => html`<li><a href=${href} aria-current=${section === name ? "page" : undefined}>${label}</a></li>`)}
        </ul>
      </nav>
      <${TenantSwitcher} onSwitch=${setScope} />
      <${TimeZoneSwitch} />
      <${SessionStatus} />
    </header>
    <main id="main" tabindex="-1">
      ${page || html`<section><h1 tabindex="-1">Not found</h1><p>No page at <code>${where.path}</code>. <a href="#/jobs">Go to Jobs</a>.</p></section>`}
    </main>`;
}

// Signed in, or no sign-in to do (signin.js): the console; else the sign-in page, with why if it failed or expired.
function Root() {
  const session = useSession();
  if (session.mode === "loading") return html`<p class="muted">Loading the console…</p>`;
  if (session.mode === "signed-out") {
    return html`<header class="top"><span class="brand">Tickwork</span></header>
      <${SignInPage} message=${session.message} signedOut=${session.signedOut} />`;
  }
  return html`<${App} />`;
}

const root = document.getElementById("app");
root.textContent = ""; // the no-JavaScript note
render(html`<${Root} />`, root);
startSession();
