"use strict";
// The run viewer's script: pages through the embedded records, highlights each mention by type (hue) and
// confidence (strength), and on a click shows the debate that decided a mention or relation.
const RUN = JSON.parse(document.getElementById("run-data").textContent);
const PAGE_SIZE = JSON.parse(document.getElementById("page-size").textContent);
const HUE = RUN.hues;
const STATUS = {correct: "correct", wrong_type: "wrong type", boundary: "wrong boundary",
                boundary_and_type: "wrong boundary and type", spurious: "spurious", missing: "missed",
                wrong: "wrong"};
let page = 0;
const method = () => document.getElementById("method")?.value ?? Object.keys(RUN.runs)[0];
let shown = RUN.runs[method()];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined) node.setAttribute(k, v);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

const conf = (c) => (c === null || c === undefined ? "" : Number(c).toFixed(2));
const strength = (s) => (s.status === "missing" ? 0 : 0.18 + 0.6 * (s.confidence ?? 0.6));
const style = (type, a) => `--h: ${HUE[type] ?? 0}; --a: ${a}`;
const status = (s) => (s && STATUS[s] ? el("span", {class: `status st-${s}`}, STATUS[s]) : null);

function highlighted(rec, ri) {
  const cuts = [...new Set([0, rec.text.length, ...rec.spans.flatMap((s) => [s.start, s.end])])];
  cuts.sort((a, b) => a - b);
  const p = el("p", {class: "text"});
  for (let k = 0; k + 1 < cuts.length; k++) {
    const [a, b] = [cuts[k], cuts[k + 1]];
    const covering = rec.spans.map((s, i) => [s, i]).filter(([s]) => s.start <= a && b <= s.end);
    if (!covering.length) {
      p.append(rec.text.slice(a, b));
      continue;
    }
    covering.sort(([x], [y]) => (x.end - x.start) - (y.end - y.start));
    const [s, i] = covering[0];
    const mark = el("mark", {class: `span st-${s.status || "none"}`, style: style(s.type, strength(s)),
                             "data-record": ri, "data-span": i, title: `${s.type} ${conf(s.confidence)}`},
                    rec.text.slice(a, b));
    if (b === s.end) mark.append(el("span", {class: "tag"}, `${s.type} ${conf(s.confidence)}`.trim()));
    mark.addEventListener("click", () => showSpan(ri, i));
    p.append(mark);
  }
  return p;
}

function relationList(rec, ri) {
  const ul = el("ul", {class: "relations"});
  rec.relations.forEach((r, i) => {
    const li = el("li", {class: `relation st-${r.status || "none"}`, "data-record": ri, "data-relation": i},
                  el("span", {class: "arg"}, r.head_text), el("span", {class: "rtype"}, ` —${r.type}→ `),
                  el("span", {class: "arg"}, r.tail_text), " ", el("span", {class: "conf"}, conf(r.confidence)),
                  " ", status(r.status));
    li.addEventListener("click", () => showRelation(ri, i));
    li.addEventListener("mouseenter", () => mark(ri, [r.head, r.tail], true));
    li.addEventListener("mouseleave", () => mark(ri, [r.head, r.tail], false));
    ul.append(li);
  });
  return ul;
}

function mark(ri, spans, on) {
  for (const i of spans) {
    if (i === null) continue;
    document.querySelectorAll(`mark[data-record="${ri}"][data-span="${i}"]`)
      .forEach((m) => m.classList.toggle("linked", on));
  }
}

function decisionView(d, missed) {
  const box = el("div", {class: "decision"});
  if (missed || !d) {
    box.append(el("p", {class: "quiet"}, missed ? "In the gold, not found by this run."
                                                : "No debate transcript: this run's labeller does not debate."));
    return box;
  }
  if (d.proposed_by.length) {
    box.append(el("h4", {}, "Proposed by"), el("ul", {class: "proposals"}, ...d.proposed_by.map((p) =>
      el("li", {}, el("b", {}, p.agent), ` ${conf(p.confidence)}`, p.evidence ? ` — “${p.evidence}”` : ""))));
  } else {
    box.append(el("p", {class: "quiet"}, "No agent's answer named it as it stands (alignment or a trim made it)."));
  }
  for (const c of d.conflicts) {
    const rows = c.stances.map((s) => el("tr", {}, el("td", {}, String(s.round)), el("td", {}, s.agent),
      el("td", {}, s.option), el("td", {}, conf(s.confidence)), el("td", {}, s.reason)));
    box.append(el("h4", {}, `Conflict (${c.kind.replace(/_/g, " ")})`),
      el("table", {class: "stances"}, el("tr", {}, ...["round", "agent", "stance", "conf.", "reason"]
        .map((h) => el("th", {}, h))), ...rows),
      el("p", {class: "verdict"}, `Settled by ${c.settled_by.replace(/_/g, " ")}: `,
         el("b", {}, c.winner ?? "none of the options")));
  }
  const probs = Object.entries(d.verdict).sort((a, b) => b[1] - a[1]);
  if (probs.length) {
    box.append(el("h4", {}, "Summarizer's verdict on the span"), el("ul", {class: "probs"}, ...probs.map(([t, p]) =>
      el("li", {}, el("span", {class: "bar", style: `width: ${Math.round(200 * p)}px`}), ` ${t} ${conf(p)}`))));
  }
  if (d.changes.length) {
    box.append(el("h4", {}, "Cross-task debate and alignment"), el("ul", {}, ...d.changes.map((c) => el("li", {}, c))));
  }
  return box;
}

function showDetail(ri, title, item) {
  const detail = document.getElementById(`detail-${ri}`);
  detail.replaceChildren(el("h3", {}, ...title), decisionView(item.decision, item.status === "missing"));
  detail.hidden = false;
}

function showSpan(ri, i) {
  const s = shown[ri].spans[i];
  const gold = s.gold.length ? ` (gold: ${s.gold.join(", ")})` : "";
  showDetail(ri, [`“${s.text}” `, el("span", {class: "tag", style: style(s.type, 0.5)}, s.type),
                  ` ${conf(s.confidence)} `, status(s.status), gold], s);
}

function showRelation(ri, i) {
  const r = shown[ri].relations[i];
  showDetail(ri, [`${r.head_text} —${r.type}→ ${r.tail_text} ${conf(r.confidence)} `, status(r.status)], r);
}

function card(rec, ri) {
  const head = el("div", {class: "record-head"}, el("b", {}, rec.id),
                  rec.confidence !== null ? ` confidence ${conf(rec.confidence)}` : "",
                  RUN.has_gold ? el("span", {class: rec.errors ? "errors" : "clean"},
                                    rec.errors ? `${rec.errors} error${rec.errors === 1 ? "" : "s"}` : "no errors") : null);
  return el("section", {class: "record", id: `record-${ri}`}, head, highlighted(rec, ri), relationList(rec, ri),
            rec.notes.length ? el("p", {class: "notes"}, rec.notes.join(" · ")) : null,
            el("div", {class: "detail", id: `detail-${ri}`, hidden: ""}));
}

function render() {
  const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
  page = Math.min(page, pages - 1);
  const first = page * PAGE_SIZE;
  document.getElementById("records").replaceChildren(
    ...shown.slice(first, first + PAGE_SIZE).map((rec, k) => card(rec, first + k)));
  document.getElementById("page-info").textContent =
    `${shown.length ? first + 1 : 0}–${Math.min(first + PAGE_SIZE, shown.length)} of ${shown.length} records, ` +
    `page ${page + 1} of ${pages}`;
}

function filter() {
  const query = document.getElementById("search").value.toLowerCase();
  const errorsOnly = document.getElementById("errors-only")?.checked;
  shown = RUN.runs[method()].filter((r) => (!errorsOnly || r.errors > 0) &&
    (!query || r.id.toLowerCase().includes(query) || r.text.toLowerCase().includes(query)));
  page = 0;
  render();
}

document.getElementById("search").addEventListener("input", filter);
document.getElementById("errors-only")?.addEventListener("change", filter);
document.getElementById("method")?.addEventListener("change", filter);
document.getElementById("prev").addEventListener("click", () => { page = Math.max(0, page - 1); render(); });
document.getElementById("next").addEventListener("click", () => { page += 1; render(); });
render();
