// Builders for codec parameter declarations, shared by every family's registration file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codecs/CodecRegistry.h"

namespace gradwire::params {

inline CodecParam number(std::string name, double value, double min, double max, std::string help,
                         bool min_exclusive = false) {
  CodecParam p;
  p.name = std::move(name);
  p.type = CodecParam::Type::kNumber;
  p.default_value = value;
  p.min = min;
  p.max = max;
  p.min_exclusive = min_exclusive;
  p.help = std::move(help);
  return p;
}

inline CodecParam integer(std::string name, std::int64_t value, double min, double max,
                          std::string help) {
  CodecParam p;
  p.name = std::move(name);
  p.type = CodecParam::Type::kInteger;
  p.default_value = value;
  p.min = min;
  p.max = max;
  p.help = std::move(help);
  return p;
}

inline CodecParam choice(std::string name, std::string value, std::vector<std::string> choices,
                         std::string help) {
  CodecParam p;
  p.name = std::move(name);
  p.type = CodecParam::Type::kString;
  p.default_value = std::move(value);
  p.choices = std::move(choices);
  p.help = std::move(help);
  return p;
}

inline CodecParam boolean(std::string name, bool value, std::string help) {
  CodecParam p;
  p.name = std::move(name);
  p.type = CodecParam::Type::kBool;
  p.default_value = value;
  p.help = std::move(help);
  return p;
}

inline CodecParam codec(std::string name, nlohmann::json value, std::string help) {
  CodecParam p;
  p.name = std::move(name);
  p.type = CodecParam::Type::kCodec;
  p.default_value = std::move(value);
  p.help = std::move(help);
  return p;
}

}  // namespace gradwire::params
