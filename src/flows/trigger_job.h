// flows/trigger_job.h — TriggerJob: is a request a job (several deliverables) or one step?
//
// The cheap, no-model structural signal of seed 002. The seed's three signals,
// checked in order of how unambiguous they are, and one more:
//   1. Checklist (checklist.h): an enumerated list of two or more items.
//   2. Job phrase: "do all of the following", "do the following", "each of the
//      following", "for each", "the following steps/tasks", "the following
//      workflow", or "workflow:" introducing steps — as whole words outside code
//      and quotes; and "in parallel" / "step by step" in a sentence that starts
//      with an action verb ("run the tests in parallel", "explain this step by
//      step"; not "the tests run in parallel and hang"). "workflow" alone is not
//      one ("fix the CI workflow file" is one step).
//   3. Compound verbs: three or more distinct action verbs, each starting a
//      clause (after the start, a sentence end, a comma, ';', ':' or a
//      conjunction), with at least one joined by a conjunction ("and", "then",
//      "or", "plus"). Verbs count in any inflection ("running", "summarized",
//      "wrote", "summarizes") as whole words ("rewrite" is not "write"). A
//      third-person form ("reviews", "updates") is as often a plural noun, so it
//      counts only when an object marker (the, a, it, all, ...) follows it; a
//      verb that is also a noun ("test", "build", "report") counts after a
//      conjunction only when an object marker or the clause end follows it.
//      After "write/create/... X to|that|which", the rest of the sentence
//      describes X and its verbs do not count ("write a script to parse logs,
//      extract errors and email them" is one step).
//   4. Counted items: exactly two such verbs joined by a conjunction, and a
//      counted set of three or more things ("these five HTTP libraries", "the 4
//      services"; not "3 times"): "research these five HTTP libraries and write
//      me a comparison" is a deliverable per library and one more.
// Biased toward a single step, as the seed says: a missed job runs as one step,
// while a false positive wastes planning tokens and fragments a task that needed
// one context. One or two verbs never fire ("read X and write Y" is one step).
// Pure and thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace orch::flows {

enum class JobSignal { None, Checklist, JobPhrase, CompoundVerbs, CountedItems };
// "none", "checklist", "job_phrase", "compound_verbs", "counted_items"
const char* job_signal_name(JobSignal signal);

struct TriggerResult {
  JobSignal signal = JobSignal::None;
  std::vector<std::string> items;  // Checklist: the items' text, in order
  std::string phrase;              // JobPhrase: the phrase found; CountedItems: "these five http libraries"
  std::vector<std::string> verbs;  // the distinct clause verbs (base forms); none for Checklist, JobPhrase

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
// not accepted here: alone they are mostly plural nouns ("and tests"), and
// trigger_job counts them only with an object after them.
std::string action_verb_base(std::string_view word);

}  // namespace orch::flows
