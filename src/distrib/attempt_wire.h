// distrib/attempt_wire.h — an attempt as it travels between a driver and a worker.
//
// The driver queues an AttemptSpec for `orch worker` processes; the worker that
// ran it sends back the AttemptOutcome. Both go through the ledger's work_items
// rows as CBOR (nlohmann's to_cbor): a command, an environment value or an output
// is bytes, valid UTF-8 or not, and comes back byte for byte. What is local to
// one machine does not travel: the spec's log, usage and stdin paths are the
// worker's to choose, and its secret masker is rebuilt by the worker from its
// own environment (the spec holds nothing the ledger does not: the plan's text
// and the masked results it was rendered from).
#pragma once

#include <string>

#include "orch/attempt_outcome.h"
#include "orch/error.h"
#include "orch/executor.h"

namespace orch::distrib {

std::string encode_spec(const AttemptSpec& spec);
// InvalidInput naming what is wrong, for bytes that are no encoded spec.
Expected<AttemptSpec> decode_spec(std::string_view bytes);

std::string encode_outcome(const AttemptOutcome& outcome);
Expected<AttemptOutcome> decode_outcome(std::string_view bytes);

}  // namespace orch::distrib
