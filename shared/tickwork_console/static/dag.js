// A workflow's steps as a DAG: dagre lays it out (node positions and edge routes); this draws its answer as SVG.
// A compensated run's compensations (docs/workflows.md) show on their steps (↺ and the status) and, in the order
// they run, under the graph.
import { html } from "./vendor/htm-preact-standalone.module.js";
import dagre from "./vendor/dagre.esm.js";
import { enc } from "./api.js";

const NODE_W = 168;
const NODE_H = 48;

// A running step's progress (its run's last ctx.progress fraction), as the node shows it: ` · 42%`.
function stepPercent(state) {
  const fraction = state && state.status === "RUNNING" && state.progress ? state.progress.fraction : null;
  return fraction === null || fraction === undefined ? "" : ` · ${Math.round(fraction * 100)}%`;
}

export function Dag({ steps, states, compensations }) {
  const undo = compensations || {};
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({ rankdir: "LR", nodesep: 24, ranksep: 56, marginx: 8, marginy: 8 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const step of steps) graph.setNode(step.id, { width: NODE_W, height: NODE_H });
  for (const step of steps) for (const upstream of step.depends_on || []) graph.setEdge(upstream, step.id);
  dagre.layout(graph);
  // The drawing's box is what it draws: dagre's own size leaves out edge routes that bend outside the nodes (an
  // edge from the first rank can start above the top), which the SVG would clip.
  const xs = [];
  const ys = [];
  for (const id of graph.nodes()) {
    const node = graph.node(id);
    xs.push(node.x - NODE_W / 2, node.x + NODE_W / 2);
    ys.push(node.y - NODE_H / 2, node.y + NODE_H / 2);
  }
  for (const e of graph.edges()) {
    for (const p of graph.edge(e).points) {
      xs.push(p.x);
      ys.push(p.y);
    }
  }
  const margin = 8;
  const left = Math.min(...xs) - margin;
  const top = Math.min(...ys) - margin;
  const width = Math.max(...xs) + margin - left;
  const height = Math.max(...ys) + margin - top;
  const path = (points) => points.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
  return html`<figure class="dag">
    <svg viewBox=${`${left} ${top} ${width} ${height}`} width=${width} height=${height} role="img" aria-label="Workflow steps as a graph">
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M0,0 L10,5 L0,10 z" class="dag-arrow" />
        </marker>
      </defs>
      ${graph.edges().map((e) => html`<path class="dag-edge" d=${path(graph.edge(e).points)} marker-end="url(#arrow)" />`)}
      ${graph.nodes().map((id) => {
        const node = graph.node(id);
        const state = states ? states[id] : null;
        const status = state ? state.status : null;
        const box = html`<g class=${`dag-node ${status ? `status-${status.toLowerCase()}` : ""}`} transform=${`translate(${node.x - NODE_W / 2},${node.y - NODE_H / 2})`} data-step=${id} data-status=${status || ""}>
          <rect width=${NODE_W} height=${NODE_H} rx="6" />
          <text x="10" y="20" class="dag-id">${id.length > 20 ? `${id.slice(0, 19)}…` : id}</text>
          <text x="10" y="38" class="dag-status">${status || ""}${state && state.skip_reason ? ` · ${state.skip_reason}` : ""}${stepPercent(state)}${undo[id] ? ` ↺ ${undo[id].status}` : ""}</text>
          <title>${id}${status ? `: ${status}` : ""}${undo[id] ? `; compensation: ${undo[id].status}` : ""}</title>
        </g>`;
        return state && state.run_id ? html`<a href=${`#/runs/${enc(state.run_id)}`} aria-label=${`Step ${id}: ${status}`}>${box}</a>` : box;
      })}
    </svg>
    ${states
      ? html`<figcaption>
          <ul class="step-list" aria-label="Steps">
            ${steps.map((step) => {
              const state = states[step.id] || {};
              return html`<li data-step=${step.id}><span class="mono">${step.id}</span> <span class=${`status status-${String(state.status || "").toLowerCase()}`}>${state.status || "—"}</span></li>`;
            })}
          </ul>
          ${Object.keys(undo).length
            ? html`<ol class="step-list" aria-label="Compensations, in the order they run">
                ${Object.entries(undo).map(([id, c]) => {
                  const label = html`<span class="mono">↺ ${id}</span> <span class=${`status status-${String(c.status).toLowerCase()}`}>${c.status}${c.skip_reason ? ` · ${c.skip_reason}` : ""}</span>`;
                  return html`<li data-compensation=${id}>${c.run_id ? html`<a href=${`#/runs/${enc(c.run_id)}`}>${label}</a>` : label}</li>`;
                })}
              </ol>`
            : null}
        </figcaption>`
      : null}
  </figure>`;
}
