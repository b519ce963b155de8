// Who the caller is (GET /v1/me, asked once a page load), and an admin's tenant switcher: whose items every page
// shows (api.js sends it as `tenant` on every read): yours, one tenant's, or every tenant's (`*`). A tenant sees no
// switcher (the API refuses a tenant that names another, 403). A change is still the caller's own tenant's.
import { html, useEffect, useState } from "./vendor/htm-preact-standalone.module.js";
import { get, setTenantScope, tenantScope } from "./api.js";
import { Cell } from "./ui.js";

export const EVERY_TENANT = "*";

let callerAnswer = null;
function askCaller() {
  if (!callerAnswer) {
    callerAnswer = get("/v1/me").then(
      (me) => {
        if (!me.admin) setTenantScope(""); // a choice left from an admin's session in this tab is not a tenant's
        return me;
      },
      () => ({ tenant: null, admin: false }), // the API unreachable: taken as not an admin
    );
  }
  return callerAnswer;
}

// null until known, then {tenant, admin}.
export function useCaller() {
  const [caller, setCaller] = useState(null);
  useEffect(() => {
    let stale = false;
    askCaller().then((answer) => !stale && setCaller(answer));
    return () => {
      stale = true;
    };
  }, []);
  return caller;
}

// null until known, then true or false.
export function useIsAdmin() {
  const caller = useCaller();
  return caller ? caller.admin : null;
}

// The admin's switcher, in the header: a tenant's name, `*` for every tenant's, or empty for your own.
export function TenantSwitcher({ onSwitch }) {
  const caller = useCaller();
  if (!caller || !caller.admin) return null;
  const submit = (event) => {
    event.preventDefault();
    const chosen = String(new FormData(event.currentTarget).get("tenant") || "").trim();
    setTenantScope(chosen);
    onSwitch(chosen);
  };
  return html`<form class="tenant-switcher" onSubmit=${submit} aria-label="Tenant switcher">
    <label>Tenant <input name="tenant" defaultValue=${tenantScope()} placeholder="yours" size="10" list="tenant-choices" title=${`Yours: ${caller.tenant}; * for every tenant's`} /></label>
    <datalist id="tenant-choices"><option value=${EVERY_TENANT}>every tenant</option></datalist>
    <button type="submit">Switch</button>
  </form>`;
}

// A list's Tenant column, shown while the switcher names a tenant or every tenant: each item says whose it is.
export const tenantShown = () => Boolean(tenantScope());
export const TenantHead = () => (tenantShown() ? html`<th>Tenant</th>` : null);
export const TenantCell = ({ item }) => (tenantShown() ? html`<${Cell} label="Tenant" className="mono">${item.tenant}<//>` : null);
// A list's column count, with the Tenant column when it is shown.
export const columnsWithTenant = (count) => count + (tenantShown() ? 1 : 0);
