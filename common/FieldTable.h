// A typed configuration's keys, each declared once: a ParamSpec bound to the struct member it
// fills. Reading a JSON object (defaults, bounds, choices as declared), writing the resolved
// object back and listing the keys all come from the same table, so the three cannot drift.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "common/ParamSpec.h"
#include "common/Units.h"

namespace gradwire {

template <typename Config>
class FieldTable {
 public:
  using Reader = std::function<void(const JsonFields&, const ParamSpec&, Config&)>;
  using Writer = std::function<void(const Config&, const ParamSpec&, nlohmann::json&)>;

  /// A key read into `member` by its declared type: numbers, integers, booleans, strings and
  /// durations (seconds in the member, "200ms" in the JSON).
  template <typename T>
  FieldTable& add(ParamSpec spec, T Config::*member) {
    fields_.push_back({std::move(spec), plain_reader(member), plain_writer(member)});
    return *this;
  }

  /// A key whose form the declaration cannot check alone (a list, a default taken from other
  /// keys): the owner reads and writes it.
  FieldTable& add(ParamSpec spec, Reader read, Writer write) {
    fields_.push_back({std::move(spec), std::move(read), std::move(write)});
    return *this;
  }

  std::vector<ParamSpec> params() const {
    std::vector<ParamSpec> out;
    for (const auto& f : fields_) out.push_back(f.spec);
    return out;
  }

  /// Fills every declared member of `config` from `fields` (defaults where a key is absent).
  /// Unknown keys are the caller's to refuse (it knows which other keys the object takes).
  void read(const JsonFields& fields, Config& config) const {
    for (const auto& f : fields_) f.read(fields, f.spec, config);
  }

  /// Adds every declared key of `config` to `out`, in declaration order.
  void write(const Config& config, nlohmann::json& out) const {
    for (const auto& f : fields_) f.write(config, f.spec, out);
  }

 private:
  struct Field {
    ParamSpec spec;
    Reader read;
    Writer write;
  };

  template <typename T>
  static Reader plain_reader(T Config::*member) {
    return [member](const JsonFields& f, const ParamSpec& spec, Config& c) {
      if constexpr (std::is_same_v<T, bool>) {
        c.*member = f.boolean(spec.name, spec.default_value.get<bool>());
      } else if constexpr (std::is_integral_v<T>) {
        c.*member = static_cast<T>(declared_integer(f, spec));
      } else if constexpr (std::is_floating_point_v<T>) {
        c.*member = spec.type == ParamSpec::Type::kDuration ? declared_duration(f, spec)
                                                            : declared_number(f, spec);
      } else {
        static_assert(std::is_same_v<T, std::string>, "a field is a number, bool or string");
        c.*member = declared_string(f, spec);
      }
    };
  }

  template <typename T>
  static Writer plain_writer(T Config::*member) {
    return [member](const Config& c, const ParamSpec& spec, nlohmann::json& out) {
      if constexpr (std::is_floating_point_v<T>) {
        if (spec.type == ParamSpec::Type::kDuration) {
          out[spec.name] = format_duration(c.*member);
          return;
        }
      }
      out[spec.name] = c.*member;
    };
  }

  std::vector<Field> fields_;
};

}  // namespace gradwire
