// One declared parameter of a configurable kind (a codec, a network family, a training
// scheme): its JSON type, default, range or choices and help. Each kind declares its
// parameters once; validation, the `gradwire codecs|networks|schemes` listings and the key
// tables in the docs are all produced from that declaration, so they cannot disagree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradwire {

struct ParamSpec {
  enum class Type {
    kNumber,
    kInteger,
    kBool,
    kString,
    kDuration,  ///< "50us", "1.5s" (common/Units.h)
    kRate,      ///< "1Gbps", "54Mbps" (common/Units.h)
    kObject,    ///< a nested object the owner validates itself (impairments, placement)
    kList,      ///< a list the owner validates itself (hybrid groups)
    kNested,    ///< a nested declared object resolved by the owning registry (compose's codecs)
  };
  std::string name;
  Type type = Type::kNumber;
  nlohmann::json default_value;
  std::string help;
  double min = -1e300;  ///< inclusive bounds for numbers and integers
  double max = 1e300;
  bool min_exclusive = false;
  std::vector<std::string> choices;  ///< allowed strings (empty: any)
  /// Set when the default depends on other keys (e.g. "80 (20 on 2.4GHz)"); listings show it
  /// instead of `default_value`.
  std::string default_text;

  /// " in [a, b]", " >= a", ... ("" when unbounded).
  std::string range_text() const;
  /// "number", "integer", "bool", "string", "duration", "rate", "object", "list", "nested".
  std::string type_name() const;
  /// The default as a listing shows it.
  std::string default_shown() const;
  /// Checks a present value of a number, integer, bool or string parameter and returns it in
  /// canonical form (3.0 for an integer becomes 3). Other types are the owner's to check.
  /// ConfigError names `where`.
  nlohmann::json check(const nlohmann::json& value, const std::string& where) const;
  /// {"name", "type", "default", "help"} plus "min"/"max"/"choices" where declared.
  nlohmann::json to_json() const;
};

/// A Markdown table (| key | type | default | allowed | meaning |) of `params`, the form the
/// docs carry for every declared kind.
std::string param_table_markdown(const std::vector<ParamSpec>& params);

/// The spec named `name` in `params`; std::logic_error when it is not declared (a bug).
const ParamSpec& param_named(const std::vector<ParamSpec>& params, const std::string& name);

/// "a, b, c": the form choices and allowed keys take in messages.
std::string join_names(const std::vector<std::string>& names);

/// A JSON value as the user wrote it, shortened for messages (1 not 1.0; long values cut).
std::string brief_value(const nlohmann::json& value);

/// The JSON array of declared keys (`--json` listings): each one's to_json().
nlohmann::json params_json(const std::vector<ParamSpec>& params);

/// Every declared name, for JsonFields::allow.
std::vector<std::string> param_names(const std::vector<ParamSpec>& params);

// Builders for declarations.
namespace params {

ParamSpec number(std::string name, double value, double min, double max, std::string help,
                 bool min_exclusive = false);
ParamSpec integer(std::string name, std::int64_t value, double min, double max,
                  std::string help);
ParamSpec choice(std::string name, std::string value, std::vector<std::string> choices,
                 std::string help);
/// `spec` with an upper bound (durations: seconds).
ParamSpec at_most(ParamSpec spec, double max);
/// A free-form string (a path, a name).
ParamSpec text(std::string name, std::string value, std::string help);
ParamSpec boolean(std::string name, bool value, std::string help);
ParamSpec duration(std::string name, std::string value, std::string help);
ParamSpec rate(std::string name, std::string value, std::string help);
ParamSpec object(std::string name, std::string help);
ParamSpec list(std::string name, std::string help);
ParamSpec nested(std::string name, nlohmann::json value, std::string help);
/// `spec` with a default that depends on other keys, described by `text`.
ParamSpec derived(ParamSpec spec, std::string text);

}  // namespace params

}  // namespace gradwire
