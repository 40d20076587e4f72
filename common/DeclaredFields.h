// Reads of one key of a JSON object through its declaration (common/ParamSpec.h): the default,
// bounds and choices are the declared ones, so what a builder accepts and what the listing
// shows cannot drift apart. Errors are those of JsonFields and common/Units.h: they name the
// key's path and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/JsonFields.h"
#include "common/ParamSpec.h"

namespace gradwire {

double declared_number(const JsonFields& fields, const ParamSpec& spec);
/// A default that depends on other keys (declared with params::derived).
double declared_number(const JsonFields& fields, const ParamSpec& spec, double fallback);

std::int64_t declared_integer(const JsonFields& fields, const ParamSpec& spec);
/// A default and an upper bound that depend on other keys (the declaration holds the widest).
std::int64_t declared_integer(const JsonFields& fields, const ParamSpec& spec,
                              std::int64_t fallback, std::int64_t max);
/// An integer key without a default ("missing" when absent).
std::int64_t declared_required_integer(const JsonFields& fields, const ParamSpec& spec);

std::string declared_string(const JsonFields& fields, const ParamSpec& spec);
/// Choices narrowed by other keys (the declaration lists them all).
std::string declared_string(const JsonFields& fields, const ParamSpec& spec,
                            const std::vector<std::string>& choices);
/// A string key without a default ("missing" when absent).
std::string declared_required_string(const JsonFields& fields, const ParamSpec& spec);

/// Bits per second.
double declared_rate(const JsonFields& fields, const ParamSpec& spec);
/// Seconds.
double declared_duration(const JsonFields& fields, const ParamSpec& spec);
/// A default that depends on other keys (declared with params::derived).
double declared_duration(const JsonFields& fields, const ParamSpec& spec, double fallback_s);
/// ConfigError at the key unless `seconds` lies within the duration's declared bounds.
void check_declared_bounds(const JsonFields& fields, const ParamSpec& spec, double seconds);

/// A list of integers >= `min` (`fallback` when absent); ConfigError at the key or the element.
std::vector<std::int64_t> declared_integer_list(const JsonFields& fields, const std::string& key,
                                                std::vector<std::int64_t> fallback,
                                                std::int64_t min);

/// The declared names of `params` after `before` and followed by `after`, for JsonFields::allow.
std::vector<std::string> allowed_keys(const std::vector<std::string>& before,
                                      const std::vector<ParamSpec>& params,
                                      const std::vector<std::string>& after = {});

}  // namespace gradwire
