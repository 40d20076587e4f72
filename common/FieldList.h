// The untyped core of a FieldTable (common/FieldTable.h): its keys, in declaration order, each
// read into and written from a config it sees as `void*`. Everything that does not depend on
// the config's type (the read order, conditions, unknown keys, writing, listing) is compiled
// once, in FieldList.cpp, instead of in every file that declares a table: a table of thirty
// keys then costs thirty small records, not thirty instantiations of the JSON reads and writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/ParamSpec.h"

namespace gradwire {

class JsonFields;

/// How a member of one type reads and writes by the declared type of its key.
struct FieldMemberOps {
  void (*read)(void* member, const JsonFields&, const ParamSpec&);
  void (*write)(const void* member, const ParamSpec&, nlohmann::json&);
};
/// Defined and instantiated, for every type a key may bind (bool, the integral types, float,
/// double, std::string), in FieldList.cpp only.
template <typename T>
FieldMemberOps field_member_ops();

class FieldList {
 public:
  using Reader = std::function<void(const JsonFields&, const ParamSpec&, void* config)>;
  using Writer = std::function<void(const void* config, const ParamSpec&, nlohmann::json&)>;
  using Condition = std::function<bool(const void* config)>;
  using Narrow = std::function<ParamSpec(ParamSpec declared, const void* config)>;

  /// A plain member's place in the config (a member, or a member of one of its parts) and how
  /// a value of its type reads and writes by the declared type.
  class Member {
   public:
    template <typename Config, typename T>
    static Member of(T Config::*member) {
      static_assert(sizeof(member) <= kPlace, "a member pointer larger than expected");
      Member m(ops_of<T>());
      std::memcpy(m.place_, &member, sizeof(member));
      m.locate_ = &locate<Config, T>;
      return m;
    }
    template <typename Config, typename Part, typename T>
    static Member of(Part Config::*part, T Part::*member) {
      static_assert(sizeof(part) + sizeof(member) <= kPlace, "member pointers larger than expected");
      Member m(ops_of<T>());
      std::memcpy(m.place_, &part, sizeof(part));
      std::memcpy(m.place_ + sizeof(part), &member, sizeof(member));
      m.locate_ = &locate_in_part<Config, Part, T>;
      return m;
    }

    /// Read and write by the declared type: for members of the types field_member_ops
    /// knows (others, such as an enum, are only located: their owner reads and writes them).
    void read(const JsonFields& fields, const ParamSpec& spec, void* config) const;
    void write(const void* config, const ParamSpec& spec, nlohmann::json& out) const;
    /// The member within `config`.
    void* place(void* config) const { return locate_(config, place_); }
    const void* place(const void* config) const {
      return locate_(const_cast<void*>(config), place_);
    }

   private:
    static constexpr std::size_t kPlace = 4 * sizeof(std::ptrdiff_t);

    template <typename T>
    static FieldMemberOps ops_of() {
      if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
        return field_member_ops<T>();
      } else {
        return FieldMemberOps{nullptr, nullptr};
      }
    }

    explicit Member(FieldMemberOps ops) : ops_(ops) {}

    template <typename Config, typename T>
    static void* locate(void* config, const unsigned char* place) {
      T Config::*member;
      std::memcpy(&member, place, sizeof(member));
      return &(static_cast<Config*>(config)->*member);
    }
    template <typename Config, typename Part, typename T>
    static void* locate_in_part(void* config, const unsigned char* place) {
      Part Config::*part;
      T Part::*member;
      std::memcpy(&part, place, sizeof(part));
      std::memcpy(&member, place + sizeof(part), sizeof(member));
      return &((static_cast<Config*>(config)->*part).*member);
    }

    FieldMemberOps ops_;
    void* (*locate_)(void* config, const unsigned char* place) = nullptr;
    alignas(std::max_align_t) unsigned char place_[kPlace] = {};
  };

  /// std::logic_error unless a member of type T may hold a key of `spec`'s declared type.
  template <typename T>
  static void expect_member_type(const ParamSpec& spec) {
    if constexpr (std::is_same_v<T, bool>) {
      expect_member_type(spec, MemberType::kBool);
    } else if constexpr (std::is_integral_v<T>) {
      expect_member_type(spec, MemberType::kInteger);
    } else if constexpr (std::is_floating_point_v<T>) {
      expect_member_type(spec, MemberType::kFloating);
    } else {
      static_assert(std::is_same_v<T, std::string>, "a field is a number, bool or string");
      expect_member_type(spec, MemberType::kString);
    }
  }

  void add(ParamSpec spec, Member member);
  void add(ParamSpec spec, Member member, Narrow narrow);
  void add(ParamSpec spec, Reader read, Writer write);
  /// Conditions on the key last added (FieldTable::only_when, written_when).
  void only_when(Condition applies);
  void written_when(Condition written);

  std::vector<ParamSpec> params() const;
  std::vector<std::string> names(const void* config) const;
  FieldList without(const std::vector<std::string>& names) const;
  void read(const JsonFields& fields, void* config) const;
  void read_allowing(const JsonFields& fields, void* config,
                     const std::vector<std::string>& extra) const;
  void write(const void* config, nlohmann::json& out) const;

 private:
  enum class MemberType { kBool, kInteger, kFloating, kString };
  static void expect_member_type(const ParamSpec& spec, MemberType type);

  struct Field;
  Field& last();
  void read_field(const Field& field, const JsonFields& fields, void* config) const;
  void read_always(const JsonFields& fields, void* config) const;
  void read_conditional(const JsonFields& fields, void* config) const;

  std::vector<Field> fields_;

 public:
  FieldList();
  FieldList(const FieldList&);
  FieldList(FieldList&&) noexcept;
  FieldList& operator=(const FieldList&);
  FieldList& operator=(FieldList&&) noexcept;
  ~FieldList();
};

}  // namespace gradwire
