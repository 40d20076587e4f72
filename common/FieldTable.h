// A typed configuration's keys, each declared once: a ParamSpec bound to the struct member it
// fills. Reading a JSON object (defaults, bounds, choices as declared), writing the resolved
// object back and listing the keys all come from the same table, so the three cannot drift.
//
// The declared type says how a value reads and writes: a rate is bits per second in a double,
// written as "1Gbps"; a duration seconds in a double, written as "50us"; an integer any
// integral member; a number a double; a string and a bool themselves. A key bound to a member
// of another type is a bug, refused (std::logic_error) where the table is made.
//
// The table is a typed front of a FieldList (common/FieldList.h), which does the reading and
// writing once for every config type, so a file declaring many keys compiles quickly.
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
#include "common/FieldList.h"
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
    FieldList::expect_member_type<T>(spec);
    list_.add(std::move(spec), FieldList::Member::of(member));
    return *this;
  }

  /// A key read into `member` of the config's part `part` (a dataset's text settings).
  template <typename Part, typename T>
  FieldTable& add(ParamSpec spec, Part Config::*part, T Part::*member) {
    FieldList::expect_member_type<T>(spec);
    list_.add(std::move(spec), FieldList::Member::of(part, member));
    return *this;
  }

  /// The key last added belongs to the object only where `applies` holds for the config read
  /// so far (a loss model's own parameters): it is read after the keys that always belong,
  /// written only then, and `names(config)` leaves it out otherwise.
  FieldTable& only_when(std::function<bool(const Config&)> applies) {
    list_.only_when(condition(std::move(applies)));
    return *this;
  }

  /// The key last added is always read, but written back only where `written` holds (a
  /// default the resolved object leaves out because another key replaces it).
  FieldTable& written_when(std::function<bool(const Config&)> written) {
    list_.written_when(condition(std::move(written)));
    return *this;
  }

  /// A key read into `member` through the declaration `narrow` gives for the config read so
  /// far. Narrowed keys are read after every other key (in declaration order), so they may
  /// depend on keys declared after them.
  template <typename T>
  FieldTable& add(ParamSpec spec, T Config::*member, Narrow narrow) {
    FieldList::expect_member_type<T>(spec);
    list_.add(std::move(spec), FieldList::Member::of(member), narrowing(std::move(narrow)));
    return *this;
  }

  /// A key of the config's part `part` read through the declaration `narrow` gives.
  template <typename Part, typename T>
  FieldTable& add(ParamSpec spec, Part Config::*part, T Part::*member, Narrow narrow) {
    FieldList::expect_member_type<T>(spec);
    list_.add(std::move(spec), FieldList::Member::of(part, member),
              narrowing(std::move(narrow)));
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
    list_.add(
        std::move(spec),
        [read = std::move(read)](const JsonFields& f, const ParamSpec& s, void* c) {
          read(f, s, *static_cast<Config*>(c));
        },
        [write = std::move(write)](const void* c, const ParamSpec& s, nlohmann::json& out) {
          write(*static_cast<const Config*>(c), s, out);
        });
    return *this;
  }

  /// The same, read and written on the config untyped (a binding compiled once, for every
  /// config type: codecs/CodecParams.h).
  FieldTable& add_untyped(ParamSpec spec, FieldList::Reader read, FieldList::Writer write) {
    list_.add(std::move(spec), std::move(read), std::move(write));
    return *this;
  }

  std::vector<ParamSpec> params() const { return list_.params(); }
  /// The keys, untyped (for code compiled once for every config type).
  const FieldList& list() const { return list_; }

  /// The keys that belong to an object whose other keys read as `config`.
  std::vector<std::string> names(const Config& config) const { return list_.names(&config); }

  /// The same table without the keys named (a family's keys as a hybrid group).
  FieldTable without(const std::vector<std::string>& names) const {
    FieldTable out;
    out.list_ = list_.without(names);
    return out;
  }

  /// Fills every declared member of `config` from `fields` (defaults where a key is absent).
  /// Unknown keys are the caller's to refuse (it knows which other keys the object takes).
  void read(const JsonFields& fields, Config& config) const { list_.read(fields, &config); }

  /// Reads the keys that always belong, refuses every key that does not belong to an object
  /// read so (`extra` besides), then reads the rest: a key of another loss model is refused
  /// as unknown before anything else of it is read.
  void read_allowing(const JsonFields& fields, Config& config,
                     const std::vector<std::string>& extra = {}) const {
    list_.read_allowing(fields, &config, extra);
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
  void write(const Config& config, nlohmann::json& out) const { list_.write(&config, out); }

 private:
  static FieldList::Condition condition(std::function<bool(const Config&)> holds) {
    return [holds = std::move(holds)](const void* c) {
      return holds(*static_cast<const Config*>(c));
    };
  }
  static FieldList::Narrow narrowing(Narrow narrow) {
    return [narrow = std::move(narrow)](ParamSpec declared, const void* c) {
      return narrow(std::move(declared), *static_cast<const Config*>(c));
    };
  }

  FieldList list_;
};

}  // namespace gradwire
