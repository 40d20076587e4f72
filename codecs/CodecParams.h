// Builders for codec parameter declarations, shared by every family's registration file, and
// the bindings of keys whose JSON form is not the member's (a choice standing for an enum or a
// flag, a nested codec object): each is declared and bound here once, so every codec that
// takes the key reads, checks and writes it the same way (codecs/CodecKind.h).
#pragma once

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "codecs/CodecRegistry.h"
#include "codecs/wire/SparseWire.h"
#include "common/DeclaredFields.h"
#include "common/FieldList.h"
#include "common/FieldTable.h"
#include "common/ParamSpec.h"

namespace gradwire {

namespace params {

/// A nested codec object ({"kind": ..., params...}), resolved by the registry with the same
/// validation and paths (compose's "select" and "quantize").
inline CodecParam codec(std::string name, nlohmann::json value, std::string help) {
  return nested(std::move(name), std::move(value), std::move(help));
}

/// `values`: the precision of the values on the compact sparse wire.
inline CodecParam values() {
  return choice("values", "fp32", {"fp32", "fp16"}, "value precision on the wire (fp16 halves it)");
}

}  // namespace params

/// The reading and writing of the choice key `spec` bound to `member`, whose value for the i-th
/// choice is the i-th of `meanings` (their bytes, each `size` long, compared as such: a bool or
/// an enum). std::logic_error unless there is one meaning per choice.
std::pair<FieldList::Reader, FieldList::Writer> choice_binding(const ParamSpec& spec,
                                                              FieldList::Member member,
                                                              std::size_t size,
                                                              std::vector<unsigned char> meanings);
/// The reading and writing of a nested codec object held in the nlohmann::json `member`.
std::pair<FieldList::Reader, FieldList::Writer> codec_binding(FieldList::Member member);

/// A choice key bound to a member of another type: `meanings[i]` is what `spec.choices[i]`
/// stands for ("global" -> true, "linf" -> Norm::kLinf). Read through the declared choices,
/// written back by name.
template <typename Options, typename T>
FieldTable<Options>& add_choice(FieldTable<Options>& keys, ParamSpec spec, T Options::*member,
                                std::vector<T> meanings) {
  static_assert(std::is_enum_v<T> || std::is_same_v<T, bool>, "a choice stands for a bool or an enum");
  std::vector<unsigned char> bytes(meanings.size() * sizeof(T));
  for (std::size_t i = 0; i < meanings.size(); ++i) {
    const T meaning = meanings[i];  // std::vector<bool> hands out proxies
    std::memcpy(bytes.data() + i * sizeof(T), &meaning, sizeof(T));
  }
  auto [read, write] =
      choice_binding(spec, FieldList::Member::of(member), sizeof(T), std::move(bytes));
  return keys.add_untyped(std::move(spec), std::move(read), std::move(write));
}

/// `values` (params::values) into a ValueFormat: fp32 or fp16.
template <typename Options>
FieldTable<Options>& add_values(FieldTable<Options>& keys, ValueFormat Options::*member) {
  return add_choice(keys, params::values(), member,
                    std::vector<ValueFormat>{ValueFormat::kFp32, ValueFormat::kFp16});
}

/// A nested codec object (params::codec) held as the registry resolved it: the factory makes
/// it with CodecRegistry::create, which validates it again with the same paths.
template <typename Options>
FieldTable<Options>& add_codec(FieldTable<Options>& keys, ParamSpec spec,
                               nlohmann::json Options::*member) {
  auto [read, write] = codec_binding(FieldList::Member::of(member));
  return keys.add_untyped(std::move(spec), std::move(read), std::move(write));
}

}  // namespace gradwire
