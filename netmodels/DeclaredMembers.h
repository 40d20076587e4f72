// A configuration struct's keys, each written once: a declared key (common/ParamSpec.h) bound to
// the member that holds its value. The key list that validation, `gradwire networks` and
// docs/networks.md read (params()), the config's reading (read(), for its from_json) and its
// resolved object (write(), for its to_json) all come from this one table, so a key cannot be
// declared, read and written three different ways.
//
// The declared type says how a value reads and writes: a rate is bits per second in a double
// and written as "1Gbps", a duration seconds written as "50us", an integer a std::uint32_t, a
// number a double, a string and a bool themselves; defaults, bounds and choices are the
// declared ones (common/DeclaredFields.h). Keys whose value the config reads itself (an
// object such as `impairments`, a default that depends on other keys) are declared without a
// member and left to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "common/ParamSpec.h"
#include "common/Units.h"

namespace gradwire {

template <typename Config>
class DeclaredMembers {
 public:
  /// A number, rate or duration key held in a double.
  DeclaredMembers& bind(ParamSpec spec, double Config::*member) {
    switch (spec.type) {
      case ParamSpec::Type::kNumber:
        return add(std::move(spec), [member](const JsonFields& f, const ParamSpec& s,
                                             Config& c) { c.*member = declared_number(f, s); },
                   [member](const Config& c) { return nlohmann::json(c.*member); });
      case ParamSpec::Type::kRate:
        return add(std::move(spec), [member](const JsonFields& f, const ParamSpec& s,
                                             Config& c) { c.*member = declared_rate(f, s); },
                   [member](const Config& c) { return nlohmann::json(format_bps(c.*member)); });
      case ParamSpec::Type::kDuration:
        return add(std::move(spec), [member](const JsonFields& f, const ParamSpec& s,
                                             Config& c) { c.*member = declared_duration(f, s); },
                   [member](const Config& c) {
                     return nlohmann::json(format_duration(c.*member));
                   });
      default:
        throw std::logic_error("key '" + spec.name + "' of type " + spec.type_name() +
                               " bound to a double");
    }
  }
  /// An integer key.
  DeclaredMembers& bind(ParamSpec spec, std::uint32_t Config::*member) {
    expect(spec, ParamSpec::Type::kInteger);
    return add(std::move(spec),
               [member](const JsonFields& f, const ParamSpec& s, Config& c) {
                 c.*member = static_cast<std::uint32_t>(declared_integer(f, s));
               },
               [member](const Config& c) { return nlohmann::json(c.*member); });
  }
  /// A string key (its declared choices, if any).
  DeclaredMembers& bind(ParamSpec spec, std::string Config::*member) {
    expect(spec, ParamSpec::Type::kString);
    return add(std::move(spec), [member](const JsonFields& f, const ParamSpec& s,
                                         Config& c) { c.*member = declared_string(f, s); },
               [member](const Config& c) { return nlohmann::json(c.*member); });
  }
  /// A bool key.
  DeclaredMembers& bind(ParamSpec spec, bool Config::*member) {
    expect(spec, ParamSpec::Type::kBool);
    return add(std::move(spec),
               [member](const JsonFields& f, const ParamSpec& s, Config& c) {
                 c.*member = f.boolean(s.name, s.default_value.template get<bool>());
               },
               [member](const Config& c) { return nlohmann::json(c.*member); });
  }
  /// A key the config reads and writes itself.
  DeclaredMembers& declare(ParamSpec spec) {
    params_.push_back(std::move(spec));
    return *this;
  }

  /// Every key, in declaration order.
  const std::vector<ParamSpec>& params() const { return params_; }
  /// Reads every bound key from `fields` into `config`, in declaration order (a key absent
  /// takes its declared default); ConfigError names the key's path.
  void read(const JsonFields& fields, Config& config) const {
    for (const Member& m : members_) m.read(fields, params_[m.spec], config);
  }
  /// Writes every bound key of `config` into `out`.
  void write(const Config& config, nlohmann::json& out) const {
    for (const Member& m : members_) out[params_[m.spec].name] = m.write(config);
  }

 private:
  struct Member {
    std::size_t spec;  // index in params_
    std::function<void(const JsonFields&, const ParamSpec&, Config&)> read;
    std::function<nlohmann::json(const Config&)> write;
  };

  static void expect(const ParamSpec& spec, ParamSpec::Type type) {
    if (spec.type != type) {
      throw std::logic_error("key '" + spec.name + "' of type " + spec.type_name() +
                             " bound to a member of another type");
    }
  }
  DeclaredMembers& add(ParamSpec spec,
                       std::function<void(const JsonFields&, const ParamSpec&, Config&)> read,
                       std::function<nlohmann::json(const Config&)> write) {
    members_.push_back(Member{params_.size(), std::move(read), std::move(write)});
    params_.push_back(std::move(spec));
    return *this;
  }

  std::vector<ParamSpec> params_;
  std::vector<Member> members_;
};

}  // namespace gradwire
