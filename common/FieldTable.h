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
    const auto at = [member](auto& c) -> auto& { return c.*member; };
    fields_.push_back(Field(std::move(spec), plain_reader<T>(at), plain_writer<T>(at)));
    return *this;
  }

  /// A key read into `member` of the config's part `part` (a dataset's text settings).
  template <typename Part, typename T>
  FieldTable& add(ParamSpec spec, Part Config::*part, T Part::*member) {
    expect_member_type<T>(spec);
    const auto at = [part, member](auto& c) -> auto& { return (c.*part).*member; };
    fields_.push_back(Field(std::move(spec), plain_reader<T>(at), plain_writer<T>(at)));
    return *this;
  }

  /// The key last added belongs to the object only where `applies` holds for the config read
  /// so far (a loss model's own parameters): it is read after the keys that always belong,
  /// written only then, and `names(config)` leaves it out otherwise.
  FieldTable& only_when(std::function<bool(const Config&)> applies) {
    last().applies = std::move(applies);
    return *this;
  }

  /// The key last added is always read, but written back only where `written` holds (a
  /// default the resolved object leaves out because another key replaces it).
  FieldTable& written_when(std::function<bool(const Config&)> written) {
    last().written = std::move(written);
    return *this;
  }

  /// A key read into `member` through the declaration `narrow` gives for the config read so
  /// far. Narrowed keys are read after every other key (in declaration order), so they may
  /// depend on keys declared after them.
  template <typename T>
  FieldTable& add(ParamSpec spec, T Config::*member, Narrow narrow) {
    expect_member_type<T>(spec);
    const auto at = [member](auto& c) -> auto& { return c.*member; };
    return add_narrowed<T>(std::move(spec), at, std::move(narrow));
  }

  /// A key of the config's part `part` read through the declaration `narrow` gives.
  template <typename Part, typename T>
  FieldTable& add(ParamSpec spec, Part Config::*part, T Part::*member, Narrow narrow) {
    expect_member_type<T>(spec);
    const auto at = [part, member](auto& c) -> auto& { return (c.*part).*member; };
    return add_narrowed<T>(std::move(spec), at, std::move(narrow));
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
    fields_.push_back(Field(std::move(spec), std::move(read), std::move(write)));
    return *this;
  }

  std::vector<ParamSpec> params() const {
    std::vector<ParamSpec> out;
    for (const auto& f : fields_) out.push_back(f.spec);
    return out;
  }

  /// The keys that belong to an object whose other keys read as `config`.
  std::vector<std::string> names(const Config& config) const {
    std::vector<std::string> out;
    for (const auto& f : fields_) {
      if (!f.applies || f.applies(config)) out.push_back(f.spec.name);
    }
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
    read_always(fields, config);
    read_conditional(fields, config);
  }

  /// Reads the keys that always belong, refuses every key that does not belong to an object
  /// read so (`extra` besides), then reads the rest: a key of another loss model is refused
  /// as unknown before anything else of it is read.
  void read_allowing(const JsonFields& fields, Config& config,
                     const std::vector<std::string>& extra = {}) const {
    bool conditional = false;
    for (const auto& f : fields_) conditional = conditional || static_cast<bool>(f.applies);
    // Without conditional keys, unknown keys are refused before any value is read.
    if (conditional) read_always(fields, config);
    std::vector<std::string> allowed = extra;
    for (auto& n : names(config)) allowed.push_back(std::move(n));
    fields.allow(allowed);
    if (!conditional) read_always(fields, config);
    read_conditional(fields, config);
  }

  /// A nested object of its own (an `impairments` object's `loss`) read at `path` into
  /// `config` (holding defaults the declaration leaves to the caller), keys that do not
  /// belong refused.
  Config read_object(const nlohmann::json& object, const std::string& path,
                     Config config) const {
    read_allowing(JsonFields(object, path), config);
    return config;
  }
  Config read_object(const nlohmann::json& object, const std::string& path) const {
    Config config;
    read_allowing(JsonFields(object, path), config);
    return config;
  }
  /// Its resolved object.
  nlohmann::json write_object(const Config& config) const {
    nlohmann::json out = nlohmann::json::object();
    write(config, out);
    return out;
  }

  /// Adds every key of `config` that belongs and is written to `out`, in declaration order.
  void write(const Config& config, nlohmann::json& out) const {
    for (const auto& f : fields_) {
      if (f.applies && !f.applies(config)) continue;
      if (f.written && !f.written(config)) continue;
      f.write(config, f.spec, out);
    }
  }

 private:
  struct Field {
    Field(ParamSpec s, Reader r, Writer w)
        : spec(std::move(s)), read(std::move(r)), write(std::move(w)) {}
    ParamSpec spec;
    Reader read;
    Writer write;
    bool narrowed = false;
    std::function<bool(const Config&)> applies;  ///< empty: always belongs
    std::function<bool(const Config&)> written;  ///< empty: written whenever it belongs
  };

  Field& last() {
    if (fields_.empty()) throw std::logic_error("a condition before any key");
    return fields_.back();
  }

  // Keys that always belong, unnarrowed first; conditional ones once those are read, so a
  // condition may test any of them.
  void read_always(const JsonFields& fields, Config& config) const {
    for (const auto& f : fields_) {
      if (!f.narrowed && !f.applies) f.read(fields, f.spec, config);
    }
    for (const auto& f : fields_) {
      if (f.narrowed && !f.applies) f.read(fields, f.spec, config);
    }
  }
  void read_conditional(const JsonFields& fields, Config& config) const {
    for (const auto& f : fields_) {
      if (f.applies && f.applies(config)) f.read(fields, f.spec, config);
    }
  }

  template <typename T, typename At>
  FieldTable& add_narrowed(ParamSpec spec, At at, Narrow narrow) {
    Reader plain = plain_reader<T>(at);
    Reader read = [plain, narrow](const JsonFields& f, const ParamSpec& s, Config& c) {
      plain(f, narrow(s, c), c);
    };
    Field field(std::move(spec), std::move(read), plain_writer<T>(at));
    field.narrowed = true;
    fields_.push_back(std::move(field));
    return *this;
  }

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

  // `at(config)` is the member a key fills (of the config or of one of its parts).
  template <typename T, typename At>
  static Reader plain_reader(At at) {
    return [at](const JsonFields& f, const ParamSpec& spec, Config& c) {
      T& member = at(c);
      if constexpr (std::is_same_v<T, bool>) {
        member = f.boolean(spec.name, spec.default_value.get<bool>());
      } else if constexpr (std::is_integral_v<T>) {
        member = static_cast<T>(declared_integer(f, spec));
      } else if constexpr (std::is_floating_point_v<T>) {
        switch (spec.type) {
          case ParamSpec::Type::kRate: member = declared_rate(f, spec); break;
          case ParamSpec::Type::kDuration: member = declared_duration(f, spec); break;
          default: member = declared_number(f, spec);
        }
      } else {
        member = declared_string(f, spec);
      }
    };
  }

  template <typename T, typename At>
  static Writer plain_writer(At at) {
    return [at](const Config& c, const ParamSpec& spec, nlohmann::json& out) {
      const T& member = at(c);
      if constexpr (std::is_floating_point_v<T>) {
        if (spec.type == ParamSpec::Type::kDuration) {
          out[spec.name] = format_duration(member);
          return;
        }
        if (spec.type == ParamSpec::Type::kRate) {
          out[spec.name] = format_bps(member);
          return;
        }
      }
      out[spec.name] = member;
    };
  }

  std::vector<Field> fields_;
};

}  // namespace gradwire
