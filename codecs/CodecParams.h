// Builders for codec parameter declarations, shared by every family's registration file: the
// common ones (number, integer, choice, boolean) and a nested codec object.
#pragma once

#include <string>
#include <utility>

#include "codecs/CodecRegistry.h"
#include "common/ParamSpec.h"

namespace gradwire::params {

/// A nested codec object ({"kind": ..., params...}), resolved by the registry with the same
/// validation and paths (compose's "select" and "quantize").
inline CodecParam codec(std::string name, nlohmann::json value, std::string help) {
  return nested(std::move(name), std::move(value), std::move(help));
}

}  // namespace gradwire::params
