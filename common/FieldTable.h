// A typed configuration's keys, each declared once: a ParamSpec bound to the struct member it
// fills. Reading a JSON object (defaults, bounds, choices as declared), writing the resolved
// object back and listing the keys all come from the same table, so the three cannot drift.
//
// The declared type says how a value reads and writes: a rate is bits per second in a double,
// written as "1Gbps"; a duration seconds in a double, written as "50us"; an integer any
// integral member; a number a double; a string and a bool themselves. A key bound to a member
// of another type is a bug, refused (std::logic_error) where the table is made.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
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
  /// The declaration as it applies to `config`, whose other keys are read: a default, bounds
  /// or choices that other keys narrow (the declaration, which the listings show, holds the
  /// widest).
  using Narrow = std::function<ParamSpec(ParamSpec declared, const Config& config)>;
  /// A nested object's reading and writing (the member's type is the member's, not theirs).
  template <typename T>
  using ObjectReader = typename std::common_type<
      std::function<T(const nlohmann::json& object, const std::string& path)>>::type;
  template <typename T>
  using ObjectWriter =
      typename std::common_type<std::function<nlohmann::json(const T&)>>::type;

  /// A key read into `member` by its declared type.
  template <typename T>
  FieldTable& add(ParamSpec spec, T Config::*member) {
    expect_member_type<T>(spec);
    fields_.push_back({std::move(spec), plain_reader(member), plain_writer(member), false});
    return *this;
  }

  /// A key read into `member` through the declaration `narrow` gives for the config read so
  /// far. Narrowed keys are read after every other key (in declaration order), so they may
  /// depend on keys declared after them.
  template <typename T>
  FieldTable& add(ParamSpec spec, T Config::*member, Narrow narrow) {
    expect_member_type<T>(spec);
    Reader plain = plain_reader(member);
    Reader read = [plain, narrow](const JsonFields& f, const ParamSpec& s, Config& c) {
      plain(f, narrow(s, c), c);
    };
    fields_.push_back({std::move(spec), std::move(read), plain_writer(member), true});
    return *this;
  }

  /// A nested object held in `member` (a type of its own, such as a placement): `read`
  /// validates the key's object (empty when absent) at the key's path, `write` gives its
  /// resolved form.
  template <typename T>
  FieldTable& add(ParamSpec spec, T Config::*member, ObjectReader<T> read,
                  ObjectWriter<T> write) {
    return add(
        std::move(spec),
        [member, read](const JsonFields& f, const ParamSpec& s, Config& c) {
          c.*member = read(f.object_at(s.name), f.path_of(s.name));
        },
        [member, write](const Config& c, const ParamSpec& s, nlohmann::json& out) {
          out[s.name] = write(c.*member);
        });
  }

  /// A key whose form the declaration cannot check alone (a list, a value checked against
  /// other keys): the owner reads and writes it, here, beside its declaration.
  FieldTable& add(ParamSpec spec, Reader read, Writer write) {
    fields_.push_back({std::move(spec), std::move(read), std::move(write), false});
    return *this;
  }

  std::vector<ParamSpec> params() const {
    std::vector<ParamSpec> out;
    for (const auto& f : fields_) out.push_back(f.spec);
    return out;
  }

  /// The same table without the keys named (a family's keys as a hybrid group).
  FieldTable without(const std::vector<std::string>& names) const {
    FieldTable out;
    for (const auto& f : fields_) {
      bool dropped = false;
      for (const auto& n : names) dropped = dropped || f.spec.name == n;
      if (!dropped) out.fields_.push_back(f);
    }
    return out;
  }

  /// Fills every declared member of `config` from `fields` (defaults where a key is absent).
  /// Unknown keys are the caller's to refuse (it knows which other keys the object takes).
  void read(const JsonFields& fields, Config& config) const {
    for (const auto& f : fields_) {
      if (!f.narrowed) f.read(fields, f.spec, config);
    }
    for (const auto& f : fields_) {
      if (f.narrowed) f.read(fields, f.spec, config);
    }
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
    bool narrowed;
  };

  template <typename T>
  static void expect_member_type(const ParamSpec& spec) {
    using Type = ParamSpec::Type;
    bool fits = false;
    if constexpr (std::is_same_v<T, bool>) {
      fits = spec.type == Type::kBool;
    } else if constexpr (std::is_integral_v<T>) {
      fits = spec.type == Type::kInteger;
    } else if constexpr (std::is_floating_point_v<T>) {
      fits = spec.type == Type::kNumber || spec.type == Type::kRate ||
             spec.type == Type::kDuration;
    } else {
      static_assert(std::is_same_v<T, std::string>, "a field is a number, bool or string");
      fits = spec.type == Type::kString;
    }
    if (!fits) {
      throw std::logic_error("key '" + spec.name + "' of type " + spec.type_name() +
                             " bound to a member of another type");
    }
  }

  template <typename T>
  static Reader plain_reader(T Config::*member) {
    return [member](const JsonFields& f, const ParamSpec& spec, Config& c) {
      if constexpr (std::is_same_v<T, bool>) {
        c.*member = f.boolean(spec.name, spec.default_value.get<bool>());
      } else if constexpr (std::is_integral_v<T>) {
        c.*member = static_cast<T>(declared_integer(f, spec));
      } else if constexpr (std::is_floating_point_v<T>) {
        switch (spec.type) {
          case ParamSpec::Type::kRate: c.*member = declared_rate(f, spec); break;
          case ParamSpec::Type::kDuration: c.*member = declared_duration(f, spec); break;
          default: c.*member = declared_number(f, spec);
        }
      } else {
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
        if (spec.type == ParamSpec::Type::kRate) {
          out[spec.name] = format_bps(c.*member);
          return;
        }
      }
      out[spec.name] = c.*member;
    };
  }

  std::vector<Field> fields_;
};

}  // namespace gradwire
