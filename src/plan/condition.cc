// plan/condition.cc — `when:` conditions: parsed, checked, evaluated (plan/condition.h).
#include "plan/condition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace orch {

enum class NodeKind { Literal, Ref, Not, And, Or, Compare };
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge };

struct ConditionNode {
  NodeKind kind = NodeKind::Literal;
  CompareOp op = CompareOp::Eq;
  nlohmann::json literal;  // Literal
  bool bare_word = false;  // Literal: a status word (done), not a quoted string
  ConditionRef ref;        // Ref
  std::size_t column = 1;
  std::unique_ptr<ConditionNode> a, b;
};

namespace {

using json = nlohmann::json;
using Node = ConditionNode;

const char* op_text(CompareOp op) {
  switch (op) {
    case CompareOp::Eq:
      return "==";
    case CompareOp::Ne:
      return "!=";
    case CompareOp::Lt:
      return "<";
    case CompareOp::Le:
      return "<=";
    case CompareOp::Gt:
      return ">";
    case CompareOp::Ge:
      return ">=";
  }
  return "?";
}

bool is_status_word(std::string_view w) {
  return std::find(std::begin(kConditionStatuses), std::end(kConditionStatuses), w) !=
         std::end(kConditionStatuses);
}

std::string ref_text(const ConditionRef& r) {
  std::string out = "steps." + r.step + (r.status ? ".status" : ".result");
  for (const auto& k : r.path) out += "." + k;
  return out;
}

std::string describe(const Node& n) {
  switch (n.kind) {
    case NodeKind::Literal:
      return n.bare_word ? n.literal.get<std::string>() : n.literal.dump();
    case NodeKind::Ref:
      return ref_text(n.ref);
    default:
      return "the expression at column " + std::to_string(n.column);
  }
}

// ---- parsing ------------------------------------------------------------------

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Expected<std::unique_ptr<Node>> parse() {
    auto root = ORCH_TRY(parse_or());
    skip_space();
    if (pos_ < s_.size()) return error(fmt::format("unexpected '{}'", s_.substr(pos_, 12)));
    return root;
  }

 private:
  std::unexpected<Error> error(const std::string& what) const {
    return std::unexpected(Error{ErrorCode::InvalidInput, fmt::format("at column {}: {}", pos_ + 1, what)});
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view token) {
    skip_space();
    if (s_.substr(pos_, token.size()) != token) return false;
    // A word operator is a whole word: `order` is not `or` then `der`.
    if (std::isalpha(static_cast<unsigned char>(token[0])) && pos_ + token.size() < s_.size() &&
        (std::isalnum(static_cast<unsigned char>(s_[pos_ + token.size()])) || s_[pos_ + token.size()] == '_'))
      return false;
    pos_ += token.size();
    return true;
  }
  std::unique_ptr<Node> node(NodeKind kind, std::size_t column) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->column = column + 1;
    return n;
  }

  Expected<std::unique_ptr<Node>> parse_or() {
    auto left = ORCH_TRY(parse_and());
    for (;;) {
      const std::size_t at = pos_;
      if (!eat("||") && !eat("or")) return left;
      auto n = node(NodeKind::Or, at);
      n->a = std::move(left);
      n->b = ORCH_TRY(parse_and());
      left = std::move(n);
    }
  }
  Expected<std::unique_ptr<Node>> parse_and() {
    auto left = ORCH_TRY(parse_unary());
    for (;;) {
      const std::size_t at = pos_;
      if (!eat("&&") && !eat("and")) return left;
      auto n = node(NodeKind::And, at);
      n->a = std::move(left);
      n->b = ORCH_TRY(parse_unary());
      left = std::move(n);
    }
  }
  Expected<std::unique_ptr<Node>> parse_unary() {
    skip_space();
    const std::size_t at = pos_;
    if ((s_.substr(pos_, 2) != "!=" && eat("!")) || eat("not")) {
      auto n = node(NodeKind::Not, at);
      n->a = ORCH_TRY(parse_unary());
      return n;
    }
    return parse_comparison();
  }
  Expected<std::unique_ptr<Node>> parse_comparison() {
    auto left = ORCH_TRY(parse_value());
    skip_space();
    const std::size_t at = pos_;
    static constexpr std::pair<std::string_view, CompareOp> kOps[] = {
        {"==", CompareOp::Eq}, {"!=", CompareOp::Ne}, {"<=", CompareOp::Le},
        {">=", CompareOp::Ge}, {"<", CompareOp::Lt},  {">", CompareOp::Gt}};
    for (const auto& [text, op] : kOps) {
      if (!eat(text)) continue;
      auto n = node(NodeKind::Compare, at);
      n->op = op;
      n->a = std::move(left);
      n->b = ORCH_TRY(parse_value());
      return n;
    }
    if (s_.substr(pos_, 1) == "=") return error("'=' is not an operator: compare with '=='");
    return left;
  }
  Expected<std::unique_ptr<Node>> parse_value() {
    skip_space();
    const std::size_t at = pos_;
    if (pos_ >= s_.size()) return error("the condition ends where a value is expected");
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      auto inner = ORCH_TRY(parse_or());
      if (!eat(")")) return error("')' expected");
      return inner;
    }
    if (s_.substr(pos_, 2) == "${") {
      pos_ += 2;
      auto ref = ORCH_TRY(parse_reference(at));
      if (!eat("}")) return error("'}' expected to close '${'");
      return ref;
    }
    if (c == '"' || c == '\'') return parse_string(at);
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return parse_number(at);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t end = pos_;
      while (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) ++end;
      const std::string word(s_.substr(pos_, end - pos_));
      if (word == "steps" && end < s_.size() && s_[end] == '.') return parse_reference(at);
      pos_ = end;
      auto n = node(NodeKind::Literal, at);
      if (word == "true" || word == "false") {
        n->literal = word == "true";
      } else if (word == "null") {
        n->literal = nullptr;
      } else {
        n->literal = word;
        n->bare_word = true;
      }
      return n;
    }
    return error(fmt::format("'{}' cannot start a value", c));
  }
  Expected<std::unique_ptr<Node>> parse_reference(std::size_t at) {
    // steps.ID.status | steps.ID.result{.KEY}
    auto word = [&]() -> std::string {
      std::size_t end = pos_;
      while (end < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_' || s_[end] == '-'))
        ++end;
      std::string w(s_.substr(pos_, end - pos_));
      pos_ = end;
      return w;
    };
    skip_space();
    if (word() != "steps" || !eat(".")) return error("a reference is steps.ID.status or steps.ID.result");
    auto n = node(NodeKind::Ref, at);
    n->ref.column = at + 1;
    n->ref.step = word();
    if (n->ref.step.empty() || s_.substr(pos_, 1) != ".")
      return error("a reference is steps.ID.status or steps.ID.result");
    ++pos_;
    const std::string field = word();
    if (field == "status") {
      n->ref.status = true;
    } else if (field != "result" && field != "json") {
      return error(
          fmt::format("steps.{}.{}: a step has .status and .result (and .result.KEY)", n->ref.step, field));
    }
    while (pos_ < s_.size() && s_[pos_] == '.') {
      if (n->ref.status) return error("a status has no keys");
      ++pos_;
      const std::string key = word();
      if (key.empty()) return error("a key is expected after '.'");
      n->ref.path.push_back(key);
    }
    return n;
  }
  Expected<std::unique_ptr<Node>> parse_string(std::size_t at) {
    const char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) return error(fmt::format("the string started at column {} is not closed", at + 1));
    ++pos_;
    auto n = node(NodeKind::Literal, at);
    n->literal = out;
    return n;
  }
  Expected<std::unique_ptr<Node>> parse_number(std::size_t at) {
    std::size_t end = pos_ + (s_[pos_] == '-' ? 1 : 0);
    while (end < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[end])) || s_[end] == '.' ||
                               s_[end] == 'e' || s_[end] == 'E'))
      ++end;
    const std::string_view text = s_.substr(pos_, end - pos_);
    auto n = node(NodeKind::Literal, at);
    std::int64_t whole = 0;
    double value = 0;
    if (auto [p, e] = std::from_chars(text.data(), text.data() + text.size(), whole);
        e == std::errc() && p == text.data() + text.size()) {
      n->literal = whole;
    } else if (auto [q, f] = std::from_chars(text.data(), text.data() + text.size(), value);
               f == std::errc() && q == text.data() + text.size()) {
      n->literal = value;
    } else {
      return error(fmt::format("'{}' is not a number", text));
    }
    pos_ = end;
    return n;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

// ---- checking -------------------------------------------------------------------

enum class Type { Bool, Status, Value };  // Value: known only from the result

Type type_of(const Node& n) {
  switch (n.kind) {
    case NodeKind::Literal:
      return n.bare_word ? Type::Status : n.literal.is_boolean() ? Type::Bool : Type::Value;
    case NodeKind::Ref:
      return n.ref.status ? Type::Status : Type::Value;
    default:
      return Type::Bool;
  }
}

void collect_refs(const Node& n, std::vector<ConditionRef>& out) {
  if (n.kind == NodeKind::Ref) out.push_back(n.ref);
  if (n.a) collect_refs(*n.a, out);
  if (n.b) collect_refs(*n.b, out);
}

// `n` is used as true/false: only what can be one.
void check_truth(const Node& n, std::vector<std::string>& out);

void check_types(const Node& n, std::vector<std::string>& out) {
  if (n.kind == NodeKind::Literal && n.bare_word && !is_status_word(n.literal.get<std::string>())) {
    out.push_back(fmt::format("'{}' is not a status (done, skipped); a string is quoted: \"{}\"",
                              n.literal.get<std::string>(), n.literal.get<std::string>()));
    return;
  }
  switch (n.kind) {
    case NodeKind::Not:
      check_truth(*n.a, out);
      return;
    case NodeKind::And:
    case NodeKind::Or:
      check_truth(*n.a, out);
      check_truth(*n.b, out);
      return;
    case NodeKind::Compare: {
      check_types(*n.a, out);
      check_types(*n.b, out);
      const Type ta = type_of(*n.a), tb = type_of(*n.b);
      const bool a_status = ta == Type::Status, b_status = tb == Type::Status;
      if (a_status || b_status) {
        const Node& other = a_status ? *n.b : *n.a;
        const bool other_ok =
            type_of(other) == Type::Status || (other.kind == NodeKind::Literal && other.literal.is_string() &&
                                               is_status_word(other.literal.get<std::string>()));
        if (n.op != CompareOp::Eq && n.op != CompareOp::Ne)
          out.push_back(
              fmt::format("'{}' orders a status: statuses are compared with == and != only", op_text(n.op)));
        else if (!other_ok)
          out.push_back(
              fmt::format("{} is compared with {}, which is not a status a condition can see (done, "
                          "skipped: a dependency that failed skips its dependents first)",
                          describe(a_status ? *n.a : *n.b), describe(other)));
      }
      if ((n.op != CompareOp::Eq && n.op != CompareOp::Ne))
        for (const Node* side : {n.a.get(), n.b.get()})
          if (side->kind == NodeKind::Literal && !side->bare_word && !side->literal.is_number() &&
              !side->literal.is_string())
            out.push_back(fmt::format("'{}' orders {}: only numbers and strings are ordered", op_text(n.op),
                                      describe(*side)));
      return;
    }
    default:
      return;
  }
}

void check_truth(const Node& n, std::vector<std::string>& out) {
  check_types(n, out);
  if (n.kind == NodeKind::Literal && !n.literal.is_boolean() &&
      !(n.bare_word && !is_status_word(n.literal.get<std::string>())))
    out.push_back(fmt::format("{} is used as true or false: compare it (==, !=, <, ...)", describe(n)));
  if (n.kind == NodeKind::Ref && n.ref.status)
    out.push_back(
        fmt::format("{} is used as true or false: compare it, e.g. {} == done", describe(n), describe(n)));
}

// ---- evaluation -----------------------------------------------------------------

Expected<json> value_of(const Node& n, const Condition::Inputs& in);

Expected<bool> truth(const Node& n, const Condition::Inputs& in) {
  switch (n.kind) {
    case NodeKind::Not:
      return !ORCH_TRY(truth(*n.a, in));
    case NodeKind::And:
      return ORCH_TRY(truth(*n.a, in)) && ORCH_TRY(truth(*n.b, in));
    case NodeKind::Or:
      return ORCH_TRY(truth(*n.a, in)) || ORCH_TRY(truth(*n.b, in));
    default: {
      const json v = ORCH_TRY(value_of(n, in));
      if (!v.is_boolean())
        return fail(ErrorCode::InvalidInput,
                    fmt::format("{} is {}, not true or false", describe(n), v.dump().substr(0, 80)));
      return v.get<bool>();
    }
  }
}

json result_value(std::string text) {
  json parsed = json::parse(text, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

Expected<json> compare(const Node& n, const json& a, const json& b) {
  if (n.op == CompareOp::Eq || n.op == CompareOp::Ne) {
    const bool equal = a.is_number() && b.is_number() ? a.get<double>() == b.get<double>() : a == b;
    return n.op == CompareOp::Eq ? equal : !equal;
  }
  int order = 0;
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    order = x < y ? -1 : x > y ? 1 : 0;
  } else if (a.is_string() && b.is_string()) {
    const int c = a.get<std::string>().compare(b.get<std::string>());
    order = c < 0 ? -1 : c > 0 ? 1 : 0;
  } else {
    return fail(ErrorCode::InvalidInput,
                fmt::format("'{}' orders {} ({}) and {} ({}): only two numbers or two strings are ordered",
                            op_text(n.op), describe(*n.a), a.dump().substr(0, 60), describe(*n.b),
                            b.dump().substr(0, 60)));
  }
  switch (n.op) {
    case CompareOp::Lt:
      return order < 0;
    case CompareOp::Le:
      return order <= 0;
    case CompareOp::Gt:
      return order > 0;
    default:
      return order >= 0;
  }
}

Expected<json> value_of(const Node& n, const Condition::Inputs& in) {
  switch (n.kind) {
    case NodeKind::Literal:
      return n.literal;
    case NodeKind::Ref: {
      const ConditionRef& r = n.ref;
      if (r.status) {
        auto s = in.status(r.step);
        if (!s) return fail(ErrorCode::InvalidInput, fmt::format("step '{}' has not settled", r.step));
        return json(*s);
      }
      auto text = in.result(r.step);
      if (!text)
        return fail(ErrorCode::InvalidInput,
                    fmt::format("steps.{}.result: step '{}' has no result ({})", r.step, r.step,
                                in.status(r.step).value_or("not settled")));
      if (r.path.empty()) return result_value(*text);
      json doc = json::parse(*text, nullptr, false);
      if (doc.is_discarded())
        return fail(ErrorCode::InvalidInput,
                    fmt::format("{}: the result of '{}' is not JSON, so it has no '{}'", ref_text(r), r.step,
                                r.path.front()));
      const json* at = &doc;
      std::string so_far = "steps." + r.step + ".result";
      for (const auto& key : r.path) {
        const json* next = nullptr;
        if (at->is_object()) {
          auto it = at->find(key);
          if (it != at->end()) next = &*it;
        } else if (at->is_array()) {
          std::size_t index = 0;
          auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
          if (ec == std::errc() && ptr == key.data() + key.size() && index < at->size()) next = &(*at)[index];
        }
        if (next == nullptr)
          return fail(ErrorCode::InvalidInput,
                      fmt::format("{} has no '{}' (it is {})", so_far, key, at->dump().substr(0, 80)));
        so_far += "." + key;
        at = next;
      }
      return *at;
    }
    case NodeKind::Compare:
      return compare(n, ORCH_TRY(value_of(*n.a, in)), ORCH_TRY(value_of(*n.b, in)));
    default:
      return json(ORCH_TRY(truth(n, in)));
  }
}

}  // namespace

Expected<Condition> Condition::parse(std::string_view text) {
  Condition c;
  c.text_ = std::string(text);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return fail(ErrorCode::InvalidInput, "the condition is empty");
  Parser parser(text);
  c.root_ = ORCH_TRY(parser.parse());
  return c;
}

Condition::Condition(Condition&&) noexcept = default;
Condition& Condition::operator=(Condition&&) noexcept = default;
Condition::~Condition() = default;

std::vector<ConditionRef> Condition::refs() const {
  std::vector<ConditionRef> out;
  collect_refs(*root_, out);
  return out;
}

std::vector<std::string> Condition::type_problems() const {
  std::vector<std::string> out;
  check_truth(*root_, out);
  return out;
}

Expected<bool> Condition::evaluate(const Inputs& in) const {
  return truth(*root_, in);
}

}  // namespace orch
