// serve/run_graph.h — GET /api/runs/ID/graph.svg: a run's DAG drawn by Graphviz.
//
// The steps of the run's latest plan version (the ledger keeps its text) and
// their `deps:` become a graph; Graphviz's `dot` layout (libgvc, Debian's
// libgraphviz-dev) places it and renders SVG, each node filled with its step's
// status colour from the ledger, its SVG class `node status-STATUS` and id
// `step-INDEX`. Graphviz escapes every name and label it writes. A run of more
// than kMaxDrawnSteps steps is not drawn (its layout would take seconds): an
// InvalidInput error saying so (the steps table lists them).
#pragma once

#include <string>

#include "orch/error.h"
#include "orch/store.h"

namespace orch::serve {

inline constexpr int kMaxDrawnSteps = 2000;

Expected<std::string> run_graph_svg(Store& store, const std::string& run_id);

// The fill colour of a step in its status.
const char* status_colour(StepStatus status);

}  // namespace orch::serve
