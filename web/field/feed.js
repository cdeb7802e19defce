// The field page's feed: who joined, revealed, committed, solved and met whom, with each
// agent's intent shown verbatim (as text, never as markup), newest first.

import { contained, isolated } from "/js/page.js";

const KEEP = 200; // entries kept

/** The feed lines of one event, for a model that knows its agents (oldest first). */
export function linesOf(ev, model) {
  const who = (id) => model.agentLabel(id);
  const intent = ev.intent ? ev.intent : "";
  const out = [];
  if (ev.kind === "join") {
    out.push({ kind: "join", who: ev.agent,
               text: `${who(ev.agent)} joined${ev.model ? ` (${isolated(ev.model)})` : ""}, seated on tile ${ev.seed_tile}` });
  } else if (ev.kind === "reveal") {
    out.push({ kind: "reveal", who: ev.agent, intent,
               text: `${who(ev.agent)} revealed tile ${ev.tile} (${ev.givens.length} givens)` });
  } else if (ev.kind === "commit") {
    const forced = ev.accepted.filter((a) => a.class === "forced").length;
    const wrong = (ev.rejected ?? []).filter((r) => r.reason === "wrong").length;
    out.push({ kind: "commit", who: ev.agent, intent,
               text: `${who(ev.agent)} committed ${ev.accepted.length} cells (${forced} forced, ` +
                     `${ev.accepted.length - forced} guess${wrong ? `, ${wrong} wrong` : ""})` });
  } else if (ev.kind === "retract") {
    out.push({ kind: "retract", who: ev.agent, intent,
               text: `${who(ev.agent)} took back ${ev.retracted.length} cells` });
  } else if (ev.kind === "grow") {
    out.push({ kind: "grow", text: ev.tiles.length ? `the field grew ${ev.tiles.length} tiles`
                                                   : "a growth found no room: the game is over" });
  } else if (ev.kind === "manifest") {
    out.push({ kind: "grow", text: `the field is ready: ${ev.manifest.tiles.length} tiles` });
  }
  for (const s of ev.solved ?? []) {
    out.push({ kind: "solve", who: s.agent, text: `${who(s.agent)} solved tile ${s.tile} (+${s.reward})` });
  }
  for (const m of ev.meets ?? []) {
    out.push({ kind: "meet", who: m.agent, text: `${who(m.agent)} met ${who(m.other)}: territories merged` });
  }
  return out.map((line) => ({ ...line, rev: ev.rev }));
}

/** The feed: `add(lines)` puts them on top of the list element. */
export class Feed {
  constructor(list) {
    this.list = list;
  }

  add(lines) {
    const items = lines.map((line) => {
      const li = document.createElement("li");
      li.className = `feed-${line.kind}`;
      li.dataset.rev = String(line.rev);
      const text = document.createElement("span");
      text.textContent = line.text;
      li.append(text);
      if (line.intent) {
        const q = document.createElement("q");
        q.className = "intent";
        q.textContent = contained(line.intent); // verbatim but for what would leave its isolate
        li.append(" ", q);
      }
      return li;
    });
    this.list.prepend(...items.reverse());
    while (this.list.children.length > KEEP) this.list.lastChild.remove();
  }
}
