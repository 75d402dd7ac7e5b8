// bench/json_parsers.cc — what orch's JSON plan reader would cost on each JSON
// library Debian packages: RapidJSON's SAX reader (what src/plan/json_reader.cc
// uses), nlohmann-json's SAX parser (the library the rest of orch uses), and
// nlohmann-json's DOM. Each handler does the same work the plan reader's does on
// every event: it copies every key and string and counts the values, so the
// difference is the parser's own.
//
//   bench_json_parsers FILE [RUNS]
//
// Prints, for each parser, the best of RUNS (default 5) wall times, and its
// ratio to RapidJSON's. Used by bench/run.sh --only 3 and docs/benchmarks.md
// ("One JSON library or two").
#include <rapidjson/reader.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// What a tree builder keeps: every string and key, and a count of values.
struct Sink {
  std::vector<std::string> strings;
  std::size_t values = 0;
};

struct RapidHandler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, RapidHandler> {
  Sink* sink;
  explicit RapidHandler(Sink* s) : sink(s) {}
  bool Default() {
    ++sink->values;
    return true;
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    sink->strings.emplace_back(s, n);
    return Default();
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    sink->strings.emplace_back(s, n);
    return true;
  }
};

struct NlohmannHandler : nlohmann::json_sax<nlohmann::json> {
  Sink* sink;
  explicit NlohmannHandler(Sink* s) : sink(s) {}
  bool value() {
    ++sink->values;
    return true;
  }
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t& s) override {
    sink->strings.push_back(s);
    return value();
  }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return value(); }
  bool key(string_t& s) override {
    sink->strings.push_back(s);
    return true;
  }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return value(); }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

template <typename F>
double best_seconds(int runs, F&& parse) {
  double best = 1e9;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    if (!parse()) {
      std::fprintf(stderr, "bench_json_parsers: a parser refused the file\n");
      std::exit(1);
    }
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_json_parsers FILE [RUNS]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "bench_json_parsers: cannot open %s\n", argv[1]);
    return 2;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;

  const double rapid = best_seconds(runs, [&] {
    Sink sink;
    RapidHandler handler(&sink);
    rapidjson::Reader reader;
    rapidjson::MemoryStream stream(text.data(), text.size());
    return !reader.Parse<rapidjson::kParseFullPrecisionFlag>(stream, handler).IsError();
  });
  const double sax = best_seconds(runs, [&] {
    Sink sink;
    NlohmannHandler handler(&sink);
    return nlohmann::json::sax_parse(text, &handler);
  });
  const double dom = best_seconds(runs, [&] {
    auto doc = nlohmann::json::parse(text, nullptr, false);
    return !doc.is_discarded();
  });
  std::printf("%-28s %8.3f s  1.00x\n", "RapidJSON SAX (orch's)", rapid);
  std::printf("%-28s %8.3f s  %.2fx\n", "nlohmann-json SAX", sax, sax / rapid);
  std::printf("%-28s %8.3f s  %.2fx\n", "nlohmann-json DOM", dom, dom / rapid);
  return 0;
}
