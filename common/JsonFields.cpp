#include "common/JsonFields.h"

#include <vector>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common/ConfigError.h"

namespace gradwire {
namespace {

const nlohmann::json& empty_object() {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  return kEmpty;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += items[i];
  }
  return out;
}

std::string range_text(double min, double max, bool min_exclusive) {
  std::ostringstream out;
  const bool lo = std::isfinite(min), hi = std::isfinite(max);
  if (lo && hi) {
    out << (min_exclusive ? "(" : "[") << min << ", " << max << "]";
  } else if (lo) {
    out << (min_exclusive ? "> " : ">= ") << min;
  } else if (hi) {
    out << "<= " << max;
  }
  return out.str();
}

}  // namespace

nlohmann::json parse_json(std::string_view text, int max_depth) {
  // nlohmann's parser keeps its own stack, but rendering, comparing and copying values
  // recurse: deeper documents are refused before anything walks them.
  bool too_deep = false;
  const nlohmann::json::parser_callback_t limit =
      [&too_deep, max_depth](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > max_depth) too_deep = true;
        return !too_deep;
      };
  // nlohmann's message quotes the bytes it read last, which need not be UTF-8. The message
  // must be, to travel in JSON (the service's error replies): invalid bytes become U+FFFD.
  const auto syntax_error = [](const char* what) {
    const std::string quoted = nlohmann::json(std::string("not valid JSON: ") + what)
                                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return JsonSyntaxError(nlohmann::json::parse(quoted).get<std::string>());
  };
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text, limit);
  } catch (const nlohmann::json::parse_error& e) {
    throw syntax_error(e.what());
  } catch (const nlohmann::json::out_of_range& e) {
    // A number no double holds (1e400) is valid JSON text that no reader of ours could use.
    throw syntax_error(e.what());
  }
  if (too_deep) {
    throw JsonTooDeep("nests deeper than " + std::to_string(max_depth) +
                                " levels of arrays and objects");
  }
  return value;
}

namespace {

/// The first `bytes` bytes of UTF-8 `text`, fewer when that would cut a character in two: a
/// message must stay valid UTF-8, or putting it into JSON (nlohmann's dump, the service's error
/// replies) throws.
std::string utf8_prefix(const std::string& text, std::size_t bytes) {
  if (text.size() <= bytes) return text;
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80) --bytes;
  return text.substr(0, bytes);
}

}  // namespace

std::string json_brief(const nlohmann::json& value) {
  // Written iteratively and only as far as the message shows: a value nested 100,000 deep
  // must not exhaust the stack (nlohmann's dump recurses) nor be rendered whole.
  constexpr std::size_t kShown = 60;
  struct Open {
    const nlohmann::json* node;
    nlohmann::json::const_iterator next;
    bool first;
  };
  std::vector<Open> open;
  std::string text;
  const auto write = [&](const nlohmann::json& v) {
    if (v.is_object() || v.is_array()) {
      text += v.is_object() ? '{' : '[';
      open.push_back({&v, v.cbegin(), true});
    } else if (v.is_string() && v.get_ref<const std::string&>().size() > kShown) {
      text += nlohmann::json(utf8_prefix(v.get_ref<const std::string&>(), kShown)).dump();
    } else {
      text += v.dump();
    }
  };
  write(value);
  while (!open.empty() && text.size() <= kShown) {
    Open& o = open.back();
    if (o.next == o.node->cend()) {
      text += o.node->is_object() ? '}' : ']';
      open.pop_back();
      continue;
    }
    if (!o.first) text += ',';
    o.first = false;
    if (o.node->is_object()) text += nlohmann::json(o.next.key()).dump() + ':';
    const nlohmann::json& child = *o.next;
    ++o.next;
    write(child);  // may grow `open`: `o` is not used after this
  }
  if (text.size() > kShown) text = utf8_prefix(text, kShown - 3) + "...";
  return text;
}

JsonFields::JsonFields(const nlohmann::json& object, std::string path)
    : object_(object), path_(std::move(path)) {
  if (!object_.is_object()) {
    throw ConfigError(path_.empty() ? "(root)" : path_,
                      "expected a JSON object, got " + json_brief(object_));
  }
}

std::string JsonFields::path_of(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonFields::allow(std::initializer_list<const char*> keys) const {
  allow(std::vector<std::string>(keys.begin(), keys.end()));
}

void JsonFields::allow(const std::vector<std::string>& keys) const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    bool known = false;
    for (const auto& k : keys) known = known || k == it.key();
    if (!known) {
      throw ConfigError(path_of(it.key()), "unknown key; expected one of: " + join(keys));
    }
  }
}

bool JsonFields::has(const std::string& key) const { return object_.contains(key); }

double JsonFields::number(const std::string& key, double fallback, double min, double max,
                          bool min_exclusive) const {
  if (!has(key)) return fallback;
  const auto& v = object_.at(key);
  const std::string range = range_text(min, max, min_exclusive);
  const std::string expected = "expected a number" + (range.empty() ? "" : " in " + range);
  if (!v.is_number()) throw ConfigError(path_of(key), expected + ", got " + json_brief(v));
  const double x = v.get<double>();
  if (!std::isfinite(x) || x > max || x < min || (min_exclusive && x == min)) {
    throw ConfigError(path_of(key), expected + ", got " + json_brief(v));
  }
  return x;
}

std::int64_t JsonFields::integer(const std::string& key, std::int64_t fallback, std::int64_t min,
                                 std::int64_t max) const {
  if (!has(key)) return fallback;
  const auto& v = object_.at(key);
  std::ostringstream expected;
  expected << "expected an integer";
  if (min != std::numeric_limits<std::int64_t>::min() &&
      max != std::numeric_limits<std::int64_t>::max()) {
    expected << " in [" << min << ", " << max << "]";
  } else if (min != std::numeric_limits<std::int64_t>::min()) {
    expected << " >= " << min;
  }
  bool integral = v.is_number_integer();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    integral = std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15;
  }
  if (!integral) throw ConfigError(path_of(key), expected.str() + ", got " + json_brief(v));
  const std::int64_t x = v.is_number_float() ? static_cast<std::int64_t>(v.get<double>())
                         : v.is_number_unsigned()
                             ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                                   v.get<std::uint64_t>(),
                                   static_cast<std::uint64_t>(
                                       std::numeric_limits<std::int64_t>::max())))
                             : v.get<std::int64_t>();
  if (x < min || x > max) {
    throw ConfigError(path_of(key), expected.str() + ", got " + json_brief(v));
  }
  return x;
}

bool JsonFields::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const auto& v = object_.at(key);
  if (!v.is_boolean()) {
    throw ConfigError(path_of(key), "expected true or false, got " + json_brief(v));
  }
  return v.get<bool>();
}

std::string JsonFields::string(const std::string& key, const std::string& fallback,
                               const std::vector<std::string>& choices) const {
  if (!has(key)) return fallback;
  const auto& v = object_.at(key);
  const std::string expected =
      choices.empty() ? "expected a string" : "expected one of: " + join(choices);
  if (!v.is_string()) throw ConfigError(path_of(key), expected + ", got " + json_brief(v));
  const std::string s = v.get<std::string>();
  if (!choices.empty()) {
    bool ok = false;
    for (const auto& c : choices) ok = ok || c == s;
    if (!ok) throw ConfigError(path_of(key), expected + ", got " + json_brief(v));
  }
  return s;
}

std::string JsonFields::required_string(const std::string& key,
                                        const std::vector<std::string>& choices) const {
  if (!has(key)) {
    throw ConfigError(path_of(key), choices.empty() ? "missing; expected a string"
                                                    : "missing; expected one of: " + join(choices));
  }
  return string(key, "", choices);
}

const nlohmann::json& JsonFields::object_at(const std::string& key) const {
  if (!has(key)) return empty_object();
  const auto& v = object_.at(key);
  if (!v.is_object()) {
    throw ConfigError(path_of(key), "expected a JSON object, got " + json_brief(v));
  }
  return v;
}

}  // namespace gradwire
