// flows/trigger_job.h — TriggerJob: is a request a job (several deliverables) or one step?
//
// The cheap, no-model structural signal of seed 002. Three signals, checked in
// order of how unambiguous they are:
//   1. Checklist: an enumerated list of two or more items — lines starting
//      "1." / "1)" / "(1)" numbered 1, 2, ... in order, or "- " / "* " / "• "
//      bullets — or an inline "(1) ... (2) ..." / "1) ... 2) ..." sequence.
//      Markers inside ``` fences are not read; "1." inside "v1.2" or prose is
//      not a marker (a marker starts a line and is followed by a space).
//   2. Job phrase: "do all of the following", "each of the following", "for
//      each", "the following steps/tasks", "the following workflow", or
//      "workflow:" introducing steps — as whole words outside code and quotes.
//      "workflow" alone is not one ("fix the CI workflow file" is one step).
//   3. Compound verbs: three or more distinct action verbs, each starting a
//      clause (after the start, a sentence end, a comma, ';', ':' or a
//      conjunction), with at least one joined by a conjunction ("and", "then",
//      "or", "plus"). Verbs are recognised in their base, -ing and -ed forms
//      ("running", "summarized", "wrote") as whole words ("rewrite" is not
//      "write"). A verb that is also a noun ("test", "build", "report") counts
//      only when an object marker (the, a, it, all, ...) or the clause end
//      follows it. After "write/create/... X to|that|which", the rest of the
//      sentence describes X and its verbs do not count ("write a script to
//      parse logs, extract errors and email them" is one step).
// Biased toward a single step, as the seed says: a missed job runs as one step,
// while a false positive wastes planning tokens and fragments a task that needed
// one context. One or two verbs never fire ("read X and write Y" is one step).
// Pure and thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace orch::flows {

enum class JobSignal { None, Checklist, JobPhrase, CompoundVerbs };
const char* job_signal_name(JobSignal signal);  // "none", "checklist", "job_phrase", "compound_verbs"

struct TriggerResult {
  JobSignal signal = JobSignal::None;
  std::vector<std::string> items;  // Checklist: the items' text, in order
  std::string phrase;              // JobPhrase: the phrase found
  std::vector<std::string> verbs;  // CompoundVerbs: the distinct verbs (base forms)

  bool is_job() const { return signal != JobSignal::None; }
  // One line for people: "checklist of 3 items", "job phrase 'for each'",
  // "3 action verbs joined by conjunctions: read, summarize, email", or
  // "no job signal: ...".
  std::string explanation() const;
};

TriggerResult trigger_job(std::string_view request);

// The base form of `word` (lower case) when it is one of TriggerJob's action
// verbs in base, -ing or -ed form ("running" -> "run", "summarized" ->
// "summarize", "wrote" -> "write"); "" otherwise. Third-person "-s" forms are
// not accepted: after a conjunction they are mostly plural nouns ("and tests").
std::string action_verb_base(std::string_view word);

}  // namespace orch::flows
