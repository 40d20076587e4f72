#include "common/FieldList.h"

#include <optional>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "common/Units.h"

namespace gradwire {

template <typename T>
FieldMemberOps field_member_ops() {
  FieldMemberOps ops;
  ops.read = [](void* place, const JsonFields& f, const ParamSpec& spec) {
    T& member = *static_cast<T*>(place);
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
  ops.write = [](const void* place, const ParamSpec& spec, nlohmann::json& out) {
    const T& member = *static_cast<const T*>(place);
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
  return ops;
}

template FieldMemberOps field_member_ops<bool>();
template FieldMemberOps field_member_ops<char>();
template FieldMemberOps field_member_ops<signed char>();
template FieldMemberOps field_member_ops<unsigned char>();
template FieldMemberOps field_member_ops<short>();
template FieldMemberOps field_member_ops<unsigned short>();
template FieldMemberOps field_member_ops<int>();
template FieldMemberOps field_member_ops<unsigned>();
template FieldMemberOps field_member_ops<long>();
template FieldMemberOps field_member_ops<unsigned long>();
template FieldMemberOps field_member_ops<long long>();
template FieldMemberOps field_member_ops<unsigned long long>();
template FieldMemberOps field_member_ops<float>();
template FieldMemberOps field_member_ops<double>();
template FieldMemberOps field_member_ops<std::string>();

void FieldList::Member::read(const JsonFields& fields, const ParamSpec& spec,
                             void* config) const {
  ops_.read(place(config), fields, spec);
}

void FieldList::Member::write(const void* config, const ParamSpec& spec,
                              nlohmann::json& out) const {
  ops_.write(place(config), spec, out);
}

struct FieldList::Field {
  ParamSpec spec;
  std::optional<Member> member;  ///< a plain member; else read and write below
  Reader read;
  Writer write;
  Narrow narrow;      ///< empty: read by the declaration itself
  Condition applies;  ///< empty: always belongs
  Condition written;  ///< empty: written whenever it belongs
};

FieldList::FieldList() = default;
FieldList::FieldList(const FieldList&) = default;
FieldList::FieldList(FieldList&&) noexcept = default;
FieldList& FieldList::operator=(const FieldList&) = default;
FieldList& FieldList::operator=(FieldList&&) noexcept = default;
FieldList::~FieldList() = default;

void FieldList::expect_member_type(const ParamSpec& spec, MemberType type) {
  using Type = ParamSpec::Type;
  bool fits = false;
  switch (type) {
    case MemberType::kBool: fits = spec.type == Type::kBool; break;
    case MemberType::kInteger: fits = spec.type == Type::kInteger; break;
    case MemberType::kFloating:
      fits = spec.type == Type::kNumber || spec.type == Type::kRate ||
             spec.type == Type::kDuration;
      break;
    case MemberType::kString: fits = spec.type == Type::kString; break;
  }
  if (!fits) {
    throw std::logic_error("key '" + spec.name + "' of type " + spec.type_name() +
                           " bound to a member of another type");
  }
}

void FieldList::add(ParamSpec spec, Member member) {
  Field field;
  field.spec = std::move(spec);
  field.member = member;
  fields_.push_back(std::move(field));
}

void FieldList::add(ParamSpec spec, Member member, Narrow narrow) {
  Field field;
  field.spec = std::move(spec);
  field.member = member;
  field.narrow = std::move(narrow);
  fields_.push_back(std::move(field));
}

void FieldList::add(ParamSpec spec, Reader read, Writer write) {
  Field field;
  field.spec = std::move(spec);
  field.read = std::move(read);
  field.write = std::move(write);
  fields_.push_back(std::move(field));
}

FieldList::Field& FieldList::last() {
  if (fields_.empty()) throw std::logic_error("a condition before any key");
  return fields_.back();
}

void FieldList::only_when(Condition applies) { last().applies = std::move(applies); }

void FieldList::written_when(Condition written) { last().written = std::move(written); }

std::vector<ParamSpec> FieldList::params() const {
  std::vector<ParamSpec> out;
  for (const auto& f : fields_) out.push_back(f.spec);
  return out;
}

std::vector<std::string> FieldList::names(const void* config) const {
  std::vector<std::string> out;
  for (const auto& f : fields_) {
    if (!f.applies || f.applies(config)) out.push_back(f.spec.name);
  }
  return out;
}

FieldList FieldList::without(const std::vector<std::string>& names) const {
  FieldList out;
  for (const auto& f : fields_) {
    bool dropped = false;
    for (const auto& n : names) dropped = dropped || f.spec.name == n;
    if (!dropped) out.fields_.push_back(f);
  }
  return out;
}

void FieldList::read_field(const Field& field, const JsonFields& fields, void* config) const {
  if (!field.narrow) {
    if (field.member) {
      field.member->read(fields, field.spec, config);
    } else {
      field.read(fields, field.spec, config);
    }
    return;
  }
  const ParamSpec narrowed = field.narrow(field.spec, config);
  if (field.member) {
    field.member->read(fields, narrowed, config);
  } else {
    field.read(fields, narrowed, config);
  }
}

// Keys that always belong, unnarrowed first; conditional ones once those are read, so a
// condition may test any of them.
void FieldList::read_always(const JsonFields& fields, void* config) const {
  for (const auto& f : fields_) {
    if (!f.narrow && !f.applies) read_field(f, fields, config);
  }
  for (const auto& f : fields_) {
    if (f.narrow && !f.applies) read_field(f, fields, config);
  }
}

void FieldList::read_conditional(const JsonFields& fields, void* config) const {
  for (const auto& f : fields_) {
    if (f.applies && f.applies(config)) read_field(f, fields, config);
  }
}

void FieldList::read(const JsonFields& fields, void* config) const {
  read_always(fields, config);
  read_conditional(fields, config);
}

void FieldList::read_allowing(const JsonFields& fields, void* config,
                              const std::vector<std::string>& extra) const {
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

void FieldList::write(const void* config, nlohmann::json& out) const {
  for (const auto& f : fields_) {
    if (f.applies && !f.applies(config)) continue;
    if (f.written && !f.written(config)) continue;
    if (f.member) {
      f.member->write(config, f.spec, out);
    } else {
      f.write(config, f.spec, out);
    }
  }
}

}  // namespace gradwire
