// The codecs a scenario's `codec` object can name, declared once in the shape every registry
// has (common/KindRegistry.h): name, summary, parameters as ParamSpecs (type, default, range,
// help), what the codec requires of the run, and how it is made. The registry validates a JSON
// object against the declaration, so every codec gets the same clear errors, and
// `gradwire codecs` lists the declarations.
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codecs/Codec.h"
#include "common/KindRegistry.h"
#include "common/ParamSpec.h"

namespace gradwire {

/// One parameter tensor's place in the flat gradient (models list them in parameters() order).
struct LayerSlice {
  std::string name;                ///< e.g. "conv1.weight"
  std::int64_t offset = 0;         ///< first element in the flat gradient
  std::vector<std::int64_t> shape; ///< e.g. {6, 1, 5, 5}; 1-D for biases
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

/// What a codec may know about the worker and the gradient it will encode.
struct CodecContext {
  int rank = 0;            ///< worker rank (-1: the server's decoding instance)
  int workers = 1;         ///< number of workers
  std::uint64_t seed = 1;  ///< scenario seed (shared-randomness codecs derive from it)
  std::int64_t numel = 0;  ///< flat gradient length
  std::vector<LayerSlice> layers;   ///< layout of the flat gradient (may be empty in tools)
  std::int64_t steps_per_epoch = 0; ///< training steps per epoch of a worker's shard (0: unknown)
};

/// A codec's declared parameter; kNested is a nested codec object ({"kind": ..., params...}),
/// resolved recursively by the registry with the same validation and paths.
using CodecParam = ParamSpec;

struct CodecInfo : KindDeclaration {
  /// Builds a codec from a fully resolved parameter object (all params present, validated).
  std::function<std::unique_ptr<Codec>(const nlohmann::json& params, const CodecContext&)> make;
  /// The kind's typed options (a std::any holding them) read from a resolved object, errors
  /// naming `path`.key, and the declared keys of such options written back: set by CodecKind
  /// (codecs/CodecKind.h); empty for a kind declared with only a make.
  std::function<std::any(const nlohmann::json& resolved, const std::string& path)> read{};
  std::function<void(const std::any& options, nlohmann::json& out)> write{};
  /// True for MultiRoundCodec implementations: the collectives drive their rounds, so they
  /// cannot sit inside the error-feedback or zstd wrappers (which would hide the rounds).
  bool multi_round = false;
  /// The codec reads the `error_feedback` key itself (keeping its own error buffer, as
  /// PowerSGD does) instead of being wrapped; `error_feedback_default` is then its default.
  bool own_error_feedback = false;
  bool error_feedback_default = false;
};

/// Every built-in codec, listed by name.
class CodecRegistry : public KindRegistry<CodecInfo>, public BuiltinKinds<CodecRegistry> {
 public:
  /// Keys every codec object takes besides its declared ones: the codec's name, the error
  /// feedback wrapper and the lossless zstd stage over any payload (ZstdStage.h).
  static constexpr const char* kKindKey = "kind";
  static constexpr const char* kErrorFeedbackKey = "error_feedback";
  static constexpr const char* kZstdKey = "zstd";

  /// std::logic_error without a make function, for a name declared twice, or for a parameter
  /// named like a key the registry adds to every codec (kind, error_feedback, zstd).
  void add(CodecInfo info);

  /// Validates a `codec` object ({"kind": NAME, params..., "error_feedback": bool}) and
  /// returns it with every default filled in. Throws ConfigError naming `path` + the key.
  nlohmann::json resolve(const nlohmann::json& object, const std::string& path) const;

  /// Builds a codec from a resolved object; wraps it in ErrorFeedback when asked.
  std::unique_ptr<Codec> create(const nlohmann::json& resolved, const CodecContext& ctx) const;

  /// The typed options of a codec object (resolved first, so defaults are filled in and
  /// errors name `path`.key) when its kind is declared with options of type `Options`
  /// (CodecKind<Options>); std::nullopt for a kind of another type. For code that needs a
  /// codec's settings without reading its keys again (gradwire advise: DGC's warm-up).
  template <typename Options>
  std::optional<Options> options(const nlohmann::json& object, const std::string& path) const {
    const nlohmann::json resolved = resolve(object, path);
    const CodecInfo& info = at(resolved.at(kKindKey).get<std::string>());
    if (!info.read) return std::nullopt;
    const std::any options = info.read(resolved, path);
    if (const auto* typed = std::any_cast<Options>(&options)) return *typed;
    return std::nullopt;
  }

 private:
  friend class BuiltinKinds<CodecRegistry>;
  CodecRegistry();
};

}  // namespace gradwire
