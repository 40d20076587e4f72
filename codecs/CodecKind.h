// A codec kind declared from its typed options: its keys as a FieldTable<Options>
// (common/FieldTable.h), each bound once to the member it fills, and a factory that builds the
// codec from the filled options. The CodecInfo it gives lists the table's keys, and its make
// reads the registry's resolved object through the same table, so a key's name, type, default
// and range are written once and no registration reads JSON key by key. Keys whose JSON form
// differs from the member (an enum chosen by name, a nested codec object) are bound by the
// helpers in codecs/CodecParams.h, shared by every codec that takes them.
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "codecs/CodecRegistry.h"
#include "common/FieldTable.h"
#include "common/JsonFields.h"

namespace gradwire {

/// `Options` is the codec's settings struct; a codec without keys takes the default.
template <typename Options = std::monostate>
class CodecKind {
 public:
  using Factory = std::function<std::unique_ptr<Codec>(const Options&, const CodecContext&)>;

  CodecKind(std::string name, std::string summary, FieldTable<Options> keys, Factory make)
      : name_(std::move(name)),
        summary_(std::move(summary)),
        keys_(std::move(keys)),
        make_(std::move(make)) {}

  /// A MultiRoundCodec: the collectives drive its rounds (CodecInfo::multi_round).
  CodecKind& multi_round() {
    multi_round_ = true;
    return *this;
  }
  /// The codec keeps its own error buffer: `error_feedback` (the key the registry gives every
  /// codec) defaults to `default_on` and is read into `member` instead of wrapping the codec.
  CodecKind& own_error_feedback(bool Options::*member, bool default_on) {
    own_error_feedback_ = true;
    error_feedback_default_ = default_on;
    return reads_error_feedback(member);
  }
  /// The factory needs the registry's `error_feedback` key (a method that always includes
  /// error feedback adds it itself when the object does not ask the registry for it).
  CodecKind& reads_error_feedback(bool Options::*member) {
    error_feedback_ = member;
    return *this;
  }
  /// The factory needs the registry's `zstd` key (to refuse it where it cannot apply).
  CodecKind& reads_zstd(bool Options::*member) {
    zstd_ = member;
    return *this;
  }

  /// The declaration the registry holds.
  CodecInfo info() const {
    CodecInfo info;
    info.name = name_;
    info.summary = summary_;
    info.params = keys_.params();
    info.multi_round = multi_round_;
    info.own_error_feedback = own_error_feedback_;
    info.error_feedback_default = error_feedback_default_;
    const auto read = [keys = keys_, ef = error_feedback_, zstd = zstd_](
                          const nlohmann::json& resolved, const std::string& path) {
      const JsonFields fields(resolved, path);
      Options options{};
      keys.read(fields, options);
      if (ef != nullptr) options.*ef = fields.boolean(CodecRegistry::kErrorFeedbackKey, false);
      if (zstd != nullptr) options.*zstd = fields.boolean(CodecRegistry::kZstdKey, false);
      return options;
    };
    info.read = [read](const nlohmann::json& resolved, const std::string& path) -> std::any {
      return read(resolved, path);
    };
    info.write = [keys = keys_](const std::any& options, nlohmann::json& out) {
      keys.write(std::any_cast<const Options&>(options), out);
    };
    // The paths of errors the keys find when the codec is made are those of the scenario's
    // `codec` object, as the registry's create resolves it.
    info.make = [read, make = make_](const nlohmann::json& resolved, const CodecContext& ctx) {
      return make(read(resolved, "codec"), ctx);
    };
    return info;
  }

 private:
  std::string name_;
  std::string summary_;
  FieldTable<Options> keys_;
  Factory make_;
  bool multi_round_ = false;
  bool own_error_feedback_ = false;
  bool error_feedback_default_ = false;
  bool Options::*error_feedback_ = nullptr;
  bool Options::*zstd_ = nullptr;
};

}  // namespace gradwire
