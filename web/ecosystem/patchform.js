// The patch and schedule form of the ecosystem page: its targets and values follow the run's
// live graph and the vocabulary the server sent (`page.graph`, `page.view`, `page.vocabulary`).

const $ = (sel) => document.querySelector(sel);

function options(select, values, selected = null) {
  select.replaceChildren(...values.map((value) => {
    const option = document.createElement("option");
    option.value = option.textContent = value;
    if (value === selected) option.selected = true;
    return option;
  }));
}

export function patchForm(page) {
  const voc = page.vocabulary;
  options($("#change-activation"), voc.activation);
  options($("#change-duration"), voc.duration, "short");
  options($("#change-transition"), voc.transition);
  patchTargets(page);
}

/** Targets and values of the patch form, from the live graph; current values first chosen. */
export function patchTargets(page) {
  const graph = page.graph ?? page.view?.graph;
  const voc = page.vocabulary;
  if (!graph || !voc) return;
  const kind = $("#patch-kind").value;
  const target = $("#patch-target");
  const keep = target.value;
  const targets = kind === "pair" ? graph.interactions.map((i) => i.pair)
    : kind === "self" ? graph.species.map((s) => s.id) : Object.keys(voc.environment);
  options(target, targets, targets.includes(keep) ? keep : targets[0]);
  patchValues(page);
}

export function patchValues(page) {
  const graph = page.graph ?? page.view.graph;
  const voc = page.vocabulary;
  const kind = $("#patch-kind").value;
  const target = $("#patch-target").value;
  const current = kind === "pair" ? graph.interactions.find((i) => i.pair === target)?.mode
    : kind === "self" ? graph.species.find((s) => s.id === target)?.self : graph.environment[target];
  const values = kind === "pair" ? voc.pair : kind === "self" ? voc.self : voc.environment[target];
  options($("#patch-value"), values, current);
}

export function patchValue() {
  const kind = $("#patch-kind").value;
  const target = $("#patch-target").value;
  const value = $("#patch-value").value;
  if (kind === "pair") return { kind, pair: target, mode: value };
  if (kind === "self") return { kind, species: target, value };
  return { kind, field: target, value };
}
