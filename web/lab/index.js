// The lab's landing page: links to its pages (for the lab named by ?id=lab:NAME) and its counts.

import { Client, socketUrl } from "/js/client.js";
import { labOfPage, linkLabPages, showCounts } from "/lab/api.js";
import { statusLine } from "/js/page.js";

const lab = labOfPage();
linkLabPages(lab);
const { say, onStatus, note } = statusLine();
Client.connect(socketUrl(), { client: "lab-index/1", onStatus }).then((client) => {
  say("live", lab.id);
  showCounts(client, lab, document.getElementById("counts"), note);
}).catch((err) => say("error", String(err.message ?? err)));
