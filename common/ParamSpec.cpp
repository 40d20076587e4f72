#include "common/ParamSpec.h"

#include "common/JsonFields.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "common/ConfigError.h"

namespace gradwire {

namespace {

using nlohmann::json;

// Shortest faithful form of a bound or value: 1 not 1.0, 0.01 not 0.0100000000000000002.
std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

std::string type_word(const json& value) {
  if (value.is_boolean()) return "boolean";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  if (value.is_array()) return "array";
  if (value.is_object()) return "object";
  return "null";
}

bool in_range(const ParamSpec& p, double v) {
  if (p.min_exclusive ? !(v > p.min) : !(v >= p.min)) return false;
  return v <= p.max;
}

ParamSpec base(std::string name, ParamSpec::Type type, json value, std::string help) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = type;
  p.default_value = std::move(value);
  p.help = std::move(help);
  return p;
}

}  // namespace

nlohmann::json params_json(const std::vector<ParamSpec>& params) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : params) out.push_back(p.to_json());
  return out;
}

std::string join_names(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

std::string brief_value(const json& value) {
  if (value.is_number_float()) return format_number(value.get<double>());
  return json_brief(value);
}

std::string ParamSpec::range_text() const {
  const bool has_min = min > -1e300;
  const bool has_max = max < 1e300;
  // Durations are declared in seconds and written with their unit, as scenarios write them.
  const std::string unit = type == Type::kDuration ? "s" : "";
  if (has_min && has_max) {
    return std::string(" in ") + (min_exclusive ? "(" : "[") + format_number(min) + unit +
           ", " + format_number(max) + unit + "]";
  }
  if (has_min) return (min_exclusive ? " > " : " >= ") + format_number(min) + unit;
  if (has_max) return " <= " + format_number(max) + unit;
  return "";
}

std::string ParamSpec::type_name() const {
  switch (type) {
    case Type::kNumber: return "number";
    case Type::kInteger: return "integer";
    case Type::kBool: return "bool";
    case Type::kString: return "string";
    case Type::kDuration: return "duration";
    case Type::kRate: return "rate";
    case Type::kObject: return "object";
    case Type::kList: return "list";
    case Type::kNested: return "nested";
  }
  return "?";
}

std::string ParamSpec::default_shown() const {
  if (!default_text.empty()) return default_text;
  if (default_value.is_null()) return "-";
  if (default_value.is_number_float()) return format_number(default_value.get<double>());
  return default_value.dump();
}

json ParamSpec::check(const json& value, const std::string& where) const {
  switch (type) {
    case Type::kNumber: {
      const std::string expected = "expected a number" + range_text();
      if (!value.is_number()) {
        throw ConfigError(where, expected + ", got " + brief_value(value) + " (" + type_word(value) + ")");
      }
      const double v = value.get<double>();
      if (!std::isfinite(v) || !in_range(*this, v)) {
        throw ConfigError(where, expected + ", got " + brief_value(value));
      }
      return value;
    }
    case Type::kInteger: {
      const std::string expected = "expected an integer" + range_text();
      if (!value.is_number()) {
        throw ConfigError(where, expected + ", got " + brief_value(value) + " (" + type_word(value) + ")");
      }
      const double v = value.get<double>();
      if (value.is_number_float() && (!std::isfinite(v) || std::floor(v) != v)) {
        throw ConfigError(where, expected + ", got " + brief_value(value) + " (not integral)");
      }
      if (!in_range(*this, v)) throw ConfigError(where, expected + ", got " + brief_value(value));
      if (value.is_number_float()) return json(static_cast<std::int64_t>(v));
      return value;
    }
    case Type::kBool:
      if (!value.is_boolean()) {
        throw ConfigError(where, "expected true or false, got " + brief_value(value) + " (" +
                                     type_word(value) + ")");
      }
      return value;
    case Type::kString: {
      const std::string expected =
          choices.empty() ? "expected a string" : "expected one of: " + join_names(choices);
      if (!value.is_string()) {
        throw ConfigError(where, expected + "; got " + brief_value(value) + " (" + type_word(value) + ")");
      }
      if (!choices.empty()) {
        const auto s = value.get<std::string>();
        bool ok = false;
        for (const auto& c : choices) ok = ok || c == s;
        if (!ok) throw ConfigError(where, expected + "; got " + brief_value(value));
      }
      return value;
    }
    case Type::kDuration:
    case Type::kRate:
    case Type::kObject:
    case Type::kList:
    case Type::kNested:
      break;
  }
  throw std::logic_error("parameter '" + name + "' (" + type_name() +
                         ") is checked by its owner, not by ParamSpec::check");
}

json ParamSpec::to_json() const {
  json j = {{"name", name}, {"type", type_name()}, {"default", default_value}, {"help", help}};
  if (!default_text.empty()) j["default_text"] = default_text;
  if (min > -1e300) j["min"] = min;
  if (max < 1e300) j["max"] = max;
  if (min_exclusive) j["min_exclusive"] = true;
  if (!choices.empty()) j["choices"] = choices;
  return j;
}

std::string param_table_markdown(const std::vector<ParamSpec>& params) {
  std::string out = "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
  for (const auto& p : params) {
    std::string allowed = p.choices.empty() ? p.range_text() : join_names(p.choices);
    if (!allowed.empty() && allowed[0] == ' ') allowed.erase(0, 1);
    std::string help = p.help;
    for (auto& c : help) {
      if (c == '|' || c == '\n') c = ' ';
    }
    out += "| `" + p.name + "` | " + p.type_name() + " | `" + p.default_shown() + "` | " +
           allowed + " | " + help + " |\n";
  }
  return out;
}

const ParamSpec& param_named(const std::vector<ParamSpec>& params, const std::string& name) {
  for (const auto& p : params) {
    if (p.name == name) return p;
  }
  throw std::logic_error("parameter '" + name + "' is not declared");
}

std::vector<std::string> param_names(const std::vector<ParamSpec>& params) {
  std::vector<std::string> names;
  names.reserve(params.size());
  for (const auto& p : params) names.push_back(p.name);
  return names;
}

namespace params {

ParamSpec number(std::string name, double value, double min, double max, std::string help,
                 bool min_exclusive) {
  ParamSpec p = base(std::move(name), ParamSpec::Type::kNumber, value, std::move(help));
  p.min = min;
  p.max = max;
  p.min_exclusive = min_exclusive;
  return p;
}

ParamSpec integer(std::string name, std::int64_t value, double min, double max,
                  std::string help) {
  ParamSpec p = base(std::move(name), ParamSpec::Type::kInteger, value, std::move(help));
  p.min = min;
  p.max = max;
  return p;
}

ParamSpec choice(std::string name, std::string value, std::vector<std::string> choices,
                 std::string help) {
  ParamSpec p = base(std::move(name), ParamSpec::Type::kString, std::move(value), std::move(help));
  p.choices = std::move(choices);
  return p;
}

ParamSpec at_most(ParamSpec spec, double max) {
  spec.max = max;
  return spec;
}

ParamSpec text(std::string name, std::string value, std::string help) {
  return base(std::move(name), ParamSpec::Type::kString, std::move(value), std::move(help));
}

ParamSpec boolean(std::string name, bool value, std::string help) {
  return base(std::move(name), ParamSpec::Type::kBool, value, std::move(help));
}

ParamSpec duration(std::string name, std::string value, std::string help) {
  return base(std::move(name), ParamSpec::Type::kDuration, std::move(value), std::move(help));
}

ParamSpec rate(std::string name, std::string value, std::string help) {
  return base(std::move(name), ParamSpec::Type::kRate, std::move(value), std::move(help));
}

ParamSpec object(std::string name, std::string help) {
  return base(std::move(name), ParamSpec::Type::kObject, json::object(), std::move(help));
}

ParamSpec list(std::string name, std::string help) {
  return base(std::move(name), ParamSpec::Type::kList, json::array(), std::move(help));
}

ParamSpec nested(std::string name, json value, std::string help) {
  return base(std::move(name), ParamSpec::Type::kNested, std::move(value), std::move(help));
}

ParamSpec derived(ParamSpec spec, std::string text) {
  spec.default_text = std::move(text);
  return spec;
}

}  // namespace params

}  // namespace gradwire
