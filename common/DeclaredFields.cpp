#include "common/DeclaredFields.h"

#include <limits>
#include <stdexcept>

#include "common/ConfigError.h"
#include "common/Units.h"

namespace gradwire {

namespace {

/// A key read as another type than declared is a bug in the builder, not in the scenario.
void expect_type(const ParamSpec& spec, ParamSpec::Type type) {
  if (spec.type != type) {
    throw std::logic_error("parameter '" + spec.name + "' is declared as " + spec.type_name());
  }
}

double lower(const ParamSpec& spec) {
  return spec.min > -1e300 ? spec.min : -std::numeric_limits<double>::infinity();
}

double upper(const ParamSpec& spec) {
  return spec.max < 1e300 ? spec.max : std::numeric_limits<double>::infinity();
}

std::int64_t lower_integer(const ParamSpec& spec) {
  return spec.min > -1e300 ? static_cast<std::int64_t>(spec.min)
                           : std::numeric_limits<std::int64_t>::min();
}

std::int64_t upper_integer(const ParamSpec& spec) {
  return spec.max < 1e300 ? static_cast<std::int64_t>(spec.max)
                          : std::numeric_limits<std::int64_t>::max();
}

/// A declared default in the units' text form ("1Gbps", "50us"), read once per call.
double default_rate(const ParamSpec& spec) {
  double bps = 0;
  if (!spec.default_value.is_string() ||
      !parse_data_rate(spec.default_value.get<std::string>(), bps)) {
    throw std::logic_error("parameter '" + spec.name + "' declares no valid default rate");
  }
  return bps;
}

double default_duration(const ParamSpec& spec) {
  double s = 0;
  if (!spec.default_value.is_string() ||
      !parse_duration(spec.default_value.get<std::string>(), s)) {
    throw std::logic_error("parameter '" + spec.name + "' declares no valid default duration");
  }
  return s;
}

}  // namespace

double declared_number(const JsonFields& fields, const ParamSpec& spec) {
  return declared_number(fields, spec, spec.default_value.get<double>());
}

double declared_number(const JsonFields& fields, const ParamSpec& spec, double fallback) {
  expect_type(spec, ParamSpec::Type::kNumber);
  return fields.number(spec.name, fallback, lower(spec), upper(spec), spec.min_exclusive);
}

std::int64_t declared_integer(const JsonFields& fields, const ParamSpec& spec) {
  return declared_integer(fields, spec, spec.default_value.get<std::int64_t>(),
                          upper_integer(spec));
}

std::int64_t declared_integer(const JsonFields& fields, const ParamSpec& spec,
                              std::int64_t fallback, std::int64_t max) {
  expect_type(spec, ParamSpec::Type::kInteger);
  return fields.integer(spec.name, fallback, lower_integer(spec), max);
}

std::int64_t declared_required_integer(const JsonFields& fields, const ParamSpec& spec) {
  expect_type(spec, ParamSpec::Type::kInteger);
  if (!fields.has(spec.name)) {
    throw ConfigError(fields.path_of(spec.name),
                      "missing; expected an integer" + spec.range_text());
  }
  return fields.integer(spec.name, 0, lower_integer(spec), upper_integer(spec));
}

std::string declared_string(const JsonFields& fields, const ParamSpec& spec) {
  return declared_string(fields, spec, spec.choices);
}

std::string declared_string(const JsonFields& fields, const ParamSpec& spec,
                            const std::vector<std::string>& choices) {
  expect_type(spec, ParamSpec::Type::kString);
  return fields.string(spec.name, spec.default_value.get<std::string>(), choices);
}

std::string declared_required_string(const JsonFields& fields, const ParamSpec& spec) {
  expect_type(spec, ParamSpec::Type::kString);
  return fields.required_string(spec.name, spec.choices);
}

double declared_rate(const JsonFields& fields, const ParamSpec& spec) {
  expect_type(spec, ParamSpec::Type::kRate);
  if (!fields.has(spec.name)) return default_rate(spec);
  return read_data_rate(fields, spec.name, 0.0);
}

double declared_duration(const JsonFields& fields, const ParamSpec& spec) {
  expect_type(spec, ParamSpec::Type::kDuration);
  if (!fields.has(spec.name)) return default_duration(spec);
  const double seconds = read_duration(fields, spec.name, 0.0);
  if (seconds > upper(spec)) {
    throw ConfigError(fields.path_of(spec.name),
                      "expected a duration of at most " + format_duration(upper(spec)) +
                          ", got " + json_brief(fields.object().at(spec.name)));
  }
  return seconds;
}

double declared_duration(const JsonFields& fields, const ParamSpec& spec, double fallback_s) {
  expect_type(spec, ParamSpec::Type::kDuration);
  return read_duration(fields, spec.name, fallback_s);
}

void check_declared_bounds(const JsonFields& fields, const ParamSpec& spec, double seconds) {
  const bool below = spec.min_exclusive ? !(seconds > lower(spec)) : !(seconds >= lower(spec));
  if (below || seconds > upper(spec)) {
    throw ConfigError(fields.path_of(spec.name), "expected a duration" + spec.range_text());
  }
}

std::vector<std::string> allowed_keys(const std::vector<std::string>& before,
                                      const std::vector<ParamSpec>& params,
                                      const std::vector<std::string>& after) {
  std::vector<std::string> keys = before;
  for (const auto& p : params) keys.push_back(p.name);
  keys.insert(keys.end(), after.begin(), after.end());
  return keys;
}

std::vector<std::int64_t> declared_integer_list(const JsonFields& f, const std::string& key,
                                                std::vector<std::int64_t> fallback,
                                                std::int64_t min) {
  if (!f.has(key)) return fallback;
  const auto& v = f.object().at(key);
  const std::string expected = "expected an array of integers >= " + std::to_string(min);
  if (!v.is_array()) throw ConfigError(f.path_of(key), expected + ", got " + json_brief(v));
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto& e = v[i];
    const std::string path = f.path_of(key) + "[" + std::to_string(i) + "]";
    if (!e.is_number_integer() || e.get<std::int64_t>() < min) {
      throw ConfigError(path, expected + ", got " + json_brief(e));
    }
    out.push_back(e.get<std::int64_t>());
  }
  return out;
}

}  // namespace gradwire
