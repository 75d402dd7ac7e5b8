// serve/page.h — the dashboard's page, built into the binary (no file is read
// to serve it, nothing is fetched from elsewhere: it works with no network).
//
// One HTML document with its script and style: the runs list (status filter,
// pages, live), and a run (its progress, budget, steps with their attempts and
// reasons, an attempt's output, the events, Approve/Deny for a paused step,
// Cancel), kept live by the event streams. Everything from the ledger is put
// into the page as text (textContent), never as markup.
#pragma once

namespace orch::serve {

extern const char kPageHtml[];

}  // namespace orch::serve
