// How a run was set up, in the page's Setup panel: the source label (the model and its
// calls, the deterministic fallback, setting up, blocked), the answers, a failure's stage
// and code with the contract conflicts and a blocked setup's review focus, and the named
// intent (organisms as spans of the answers, stated links).

import { isolated } from "/js/page.js";

export const FIELDS = ["world", "threat", "reward"]; // the three answers
const $ = (sel) => document.querySelector(sel);

/** Show `setup` (a view's `setup`, or `{source: "setting_up" | "blocked", ...}`). */
export function drawOrigin(setup) {
  const label = $("#source-label");
  label.dataset.source = setup.source;
  label.textContent = {
    model: `set up by the model · ${setup.calls ?? 0} calls`,
    deterministic_fallback: "deterministic fallback (keyword setup)",
    setting_up: "the model is interpreting the answers…",
    blocked: "blocked by the fidelity review",
  }[setup.source] ?? setup.source;
  const answers = setup.answers;
  $("#answers").textContent = answers ? FIELDS.map((k) => `${k}: ${isolated(answers[k])}`).join(" · ") : "";
  const failure = setup.failure ?? setup.blocked?.failure ?? null;
  const box = $("#failure");
  box.hidden = !failure;
  if (failure) {
    const focus = setup.blocked?.review_focus ? ` · review focus ${setup.blocked.review_focus}` : "";
    box.replaceChildren(`failed at ${failure.stage}: ${failure.code}${focus}`);
    if (failure.conflicts?.length) {
      const ul = document.createElement("ul");
      ul.className = "conflicts";
      for (const text of failure.conflicts) {
        const li = document.createElement("li");
        li.textContent = text;
        ul.append(li);
      }
      box.append(" · contract conflicts:", ul);
    }
  }
  const intent = setup.named_intent ?? setup.blocked?.named_intent ?? null;
  const ib = $("#intent");
  ib.hidden = !intent;
  if (intent) {
    const ul = document.createElement("ul");
    for (const o of intent.organisms) {
      const li = document.createElement("li");
      li.textContent = `${o.slot}: ${isolated(o.name)} (${o.source} ${o.start}..${o.end})${o.role ? `, ${o.role}` : ""}`;
      ul.append(li);
    }
    for (const l of intent.links) {
      const li = document.createElement("li");
      li.textContent = `${l.eater} eats ${l.eaten} (stated)`;
      ul.append(li);
    }
    ib.replaceChildren("named intent:", ul);
  }
}
