// Builders for codec parameter declarations, shared by every family's registration file, and
// the bindings of keys whose JSON form is not the member's (a choice standing for an enum or a
// flag, a nested codec object): each is declared and bound here once, so every codec that
// takes the key reads, checks and writes it the same way (codecs/CodecKind.h).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "codecs/CodecRegistry.h"
#include "codecs/wire/SparseWire.h"
#include "common/DeclaredFields.h"
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

/// A choice key bound to a member of another type: `meanings[i]` is what `spec.choices[i]`
/// stands for ("global" -> true, "linf" -> Norm::kLinf). Read through the declared choices,
/// written back by name.
template <typename Options, typename T>
FieldTable<Options>& add_choice(FieldTable<Options>& keys, ParamSpec spec, T Options::*member,
                                std::vector<T> meanings) {
  if (spec.choices.size() != meanings.size()) {
    throw std::logic_error("key '" + spec.name + "' declares " +
                           std::to_string(spec.choices.size()) + " choices but binds " +
                           std::to_string(meanings.size()));
  }
  return keys.add(
      std::move(spec),
      [member, meanings](const JsonFields& f, const ParamSpec& s, Options& o) {
        const std::string name = declared_string(f, s);
        for (std::size_t i = 0; i < s.choices.size(); ++i) {
          if (s.choices[i] == name) o.*member = meanings[i];
        }
      },
      [member, meanings](const Options& o, const ParamSpec& s, nlohmann::json& out) {
        for (std::size_t i = 0; i < meanings.size(); ++i) {
          if (meanings[i] == o.*member) {
            out[s.name] = s.choices[i];
            return;
          }
        }
        throw std::logic_error("key '" + s.name + "' holds a value no choice stands for");
      });
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
  return keys.add(
      std::move(spec), member,
      [](const nlohmann::json& object, const std::string&) { return object; },
      [](const nlohmann::json& object) { return object; });
}

}  // namespace gradwire
