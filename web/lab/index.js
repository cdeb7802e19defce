// The lab's landing page: links to its pages (for the lab named by ?id=lab:NAME) and its counts.

import { Client, socketUrl } from "/js/client.js";
import { labOfPage, linkLabPages, showCounts } from "/lab/api.js";
import { setStatus } from "/js/page.js";

const lab = labOfPage();
linkLabPages(lab);
const live = () => setStatus("live", lab.id);
Client.connect(socketUrl(), {
  client: "lab-index/1", onStatus: (s) => (s === "open" ? live() : setStatus(s, s)),
}).then((client) => {
  live();
  showCounts(client, lab, document.getElementById("counts"));
}).catch((err) => setStatus("error", String(err.message ?? err)));
