// Typed, path-aware reads from one JSON object of a scenario. Every error names the full JSON
// path ("training.optimizer.lr") and the expected form, so the CLI can report it with exit 2.
// Shared by codecs, network builders and the scenario loader (hence it lives in the lowest
// layer).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradwire {

class JsonFields {
 public:
  /// Throws ConfigError at `path` unless `object` is a JSON object.
  JsonFields(const nlohmann::json& object, std::string path);

  /// Rejects any key not listed (ConfigError at path.key, listing what is allowed).
  void allow(std::initializer_list<const char*> keys) const;
  void allow(const std::vector<std::string>& keys) const;

  bool has(const std::string& key) const;
  std::string path_of(const std::string& key) const;
  const nlohmann::json& object() const { return object_; }

  /// Optional reads: the default when absent; type and range checked when present.
  double number(const std::string& key, double fallback,
                double min = -std::numeric_limits<double>::infinity(),
                double max = std::numeric_limits<double>::infinity(),
                bool min_exclusive = false) const;
  std::int64_t integer(const std::string& key, std::int64_t fallback,
                       std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                       std::int64_t max = std::numeric_limits<std::int64_t>::max()) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string string(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& choices = {}) const;

  /// Required string (ConfigError "missing" when absent).
  std::string required_string(const std::string& key,
                              const std::vector<std::string>& choices = {}) const;

  /// A nested object (empty object when absent); ConfigError if present but not an object.
  const nlohmann::json& object_at(const std::string& key) const;

 private:
  const nlohmann::json& object_;
  std::string path_;
};

/// Short JSON rendering of a value for error messages ("1.5", "\"abc\"", "[...]"), at most 60
/// characters however large or deep the value.
std::string json_brief(const nlohmann::json& value);

/// The deepest nesting of arrays and objects gradwire reads from a file, a command line or a
/// client: far beyond any real scenario, sweep or message, and shallow enough that no recursive
/// walk over a value (rendering, copying, comparing) can exhaust the stack.
constexpr int kMaxJsonDepth = 64;

/// Text that is not JSON; what() says where the syntax breaks.
class JsonSyntaxError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// JSON nested deeper than the limit parse_json was given.
class JsonTooDeep : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Parses `text`; JsonSyntaxError ("not valid JSON: ...", also for a number beyond a double's
/// range) or JsonTooDeep ("nests deeper than N levels ..."). Callers add where the text came
/// from.
nlohmann::json parse_json(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace gradwire
