// A codec kind declared from its typed options: its keys as a FieldTable<Options>
// (common/FieldTable.h), each bound once to the member it fills, and a factory that builds the
// codec from the filled options. The CodecInfo it gives lists the table's keys, and its make
// reads the registry's resolved object through the same table, so a key's name, type, default
// and range are written once and no registration reads JSON key by key. Keys whose JSON form
// differs from the member (an enum chosen by name, a nested codec object) are bound by the
// helpers in codecs/CodecParams.h, shared by every codec that takes them.
//
// What does not depend on the options' type (the CodecInfo's read, write and make) is built
// once, in CodecKind.cpp, on the options as a std::any: a registration file declaring a dozen
// kinds compiles a dozen small factories, not a dozen copies of that machinery.
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "codecs/CodecRegistry.h"
#include "common/FieldList.h"
#include "common/FieldTable.h"
#include "common/JsonFields.h"

namespace gradwire {

/// The part of a CodecKind that does not depend on its options' type.
class UntypedCodecKind {
 public:
  /// The declaration the registry holds.
  CodecInfo info() const;

 protected:
  /// Makes the codec from options held in a std::any made by `fresh`.
  using Make = std::function<std::unique_ptr<Codec>(const std::any& options, const CodecContext&)>;
  /// A default-constructed options object, and where it lies in the std::any.
  struct OptionsType {
    std::any (*fresh)();
    void* (*place)(std::any& options);
    const void* (*const_place)(const std::any& options);
  };

  UntypedCodecKind(std::string name, std::string summary, FieldList keys, OptionsType type,
                   Make make);

  template <typename Options>
  static OptionsType options_type() {
    return OptionsType{[]() { return std::any(Options{}); },
                       [](std::any& o) -> void* { return std::any_cast<Options>(&o); },
                       [](const std::any& o) -> const void* {
                         return std::any_cast<Options>(&o);
                       }};
  }

  bool multi_round_ = false;
  bool own_error_feedback_ = false;
  bool error_feedback_default_ = false;
  std::optional<FieldList::Member> error_feedback_;  ///< where the factory reads the key
  std::optional<FieldList::Member> zstd_;

 private:
  std::string name_;
  std::string summary_;
  FieldList keys_;
  OptionsType type_;
  Make make_;
};

/// `Options` is the codec's settings struct; a codec without keys takes the default.
template <typename Options = std::monostate>
class CodecKind : public UntypedCodecKind {
 public:
  using Factory = std::function<std::unique_ptr<Codec>(const Options&, const CodecContext&)>;
  /// A factory without captures, kept as a plain pointer (no std::function of its own).
  using FactoryFunction = std::unique_ptr<Codec> (*)(const Options&, const CodecContext&);

  /// `make` is a Factory: a lambda without captures, or any callable.
  template <typename Make>
  CodecKind(std::string name, std::string summary, FieldTable<Options> keys, Make make)
      : UntypedCodecKind(std::move(name), std::move(summary), keys.list(),
                         options_type<Options>(), untyped(std::move(make))) {}

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
    error_feedback_ = FieldList::Member::of(member);
    return *this;
  }
  /// The factory needs the registry's `zstd` key (to refuse it where it cannot apply).
  CodecKind& reads_zstd(bool Options::*member) {
    zstd_ = FieldList::Member::of(member);
    return *this;
  }

 private:
  template <typename Make>
  static UntypedCodecKind::Make untyped(Make make) {
    if constexpr (std::is_convertible_v<Make, FactoryFunction>) {
      return untyped_function(make);
    } else {
      return untyped_factory(Factory(std::move(make)));
    }
  }
  static UntypedCodecKind::Make untyped_function(FactoryFunction make) {
    return [make](const std::any& o, const CodecContext& ctx) {
      return make(*std::any_cast<Options>(&o), ctx);
    };
  }
  static UntypedCodecKind::Make untyped_factory(Factory make) {
    return [make = std::move(make)](const std::any& o, const CodecContext& ctx) {
      return make(*std::any_cast<Options>(&o), ctx);
    };
  }
};

}  // namespace gradwire
