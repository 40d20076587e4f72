#include "codecs/CodecRegistry.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "codecs/BuiltinCodecs.h"
#include "codecs/CodecKind.h"
#include "codecs/DenseCodec.h"
#include "codecs/ErrorFeedback.h"
#include "codecs/sparsify/TopKCodec.h"
#include "codecs/wire/WireFormat.h"
#include "codecs/ZstdStage.h"
#include "common/ConfigError.h"

namespace gradwire {

namespace {

using nlohmann::json;

/// topk's one key.
struct TopKOptions {
  double ratio = TopKCodec::kDefaultRatio;
};

}  // namespace

CodecRegistry::CodecRegistry() {
  add(CodecKind<>("none",
                  "dense float32, no compression; the baseline. Summable: ring all-reduce adds "
                  "payloads without decoding.",
                  {},
                  [](const std::monostate&, const CodecContext&) -> std::unique_ptr<Codec> {
                    return std::make_unique<DenseCodec>();
                  })
          .info());

  add(CodecKind<TopKOptions>(
          "topk",
          "top-k sparsification: the k largest-magnitude values with their u32 indices "
          "(12 + 4 + 8k bytes). Not summable. Use with error_feedback.",
          FieldTable<TopKOptions>().add(
              params::number("ratio", TopKCodec::kDefaultRatio, 0.0, 1.0,
                             "fraction of elements sent: k = max(1, round(ratio * n)) of "
                             "largest magnitude, halves up",
                             /*min_exclusive=*/true),
              &TopKOptions::ratio),
          [](const TopKOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
            // Decode never needs more than the worker's gradient length; bounding it keeps a
            // corrupt header from requesting a huge allocation.
            const std::uint64_t max_elements =
                ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel) : std::uint64_t{1} << 32;
            return std::make_unique<TopKCodec>(o.ratio, max_elements);
          })
          .info());
  // Each family's registration function (codecs/BuiltinCodecs.h) adds its codecs.
  register_sparsifiers(*this);
  register_quantizers(*this);
  register_correlation_codecs(*this);
  register_learned_codecs(*this);
  sort_by_name();
}

void CodecRegistry::add(CodecInfo info) {
  if (info.name.empty() || !info.make) {
    throw std::logic_error("codec registration needs a name and a make function");
  }
  for (const auto& p : info.params) {
    if (p.name == kKindKey || p.name == kErrorFeedbackKey || p.name == kZstdKey) {
      throw std::logic_error("codec '" + info.name + "' declares reserved param '" + p.name + "'");
    }
  }
  KindRegistry<CodecInfo>::add(std::move(info));
}

nlohmann::json CodecRegistry::resolve(const nlohmann::json& object,
                                      const std::string& path) const {
  const auto at = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  const std::vector<std::string> codecs = names();

  if (!object.is_object()) {
    throw ConfigError(path, "expected an object like {\"kind\": \"topk\", \"ratio\": 0.01}, got " +
                                brief_value(object));
  }
  const auto kind = object.find(kKindKey);
  if (kind == object.end()) {
    throw ConfigError(at(kKindKey), "missing; expected a codec name, one of: " + join_names(codecs));
  }
  if (!kind->is_string()) {
    throw ConfigError(at(kKindKey), "expected a string naming a codec (one of: " + join_names(codecs) +
                                        "), got " + brief_value(*kind));
  }
  const std::string name = kind->get<std::string>();
  const CodecInfo* info = find(name);
  if (info == nullptr) {
    throw ConfigError(at(kKindKey),
                      "unknown codec \"" + name + "\"; expected one of: " + join_names(codecs));
  }

  std::vector<std::string> allowed{kKindKey};
  for (const auto& p : info->params) allowed.push_back(p.name);
  allowed.push_back(kErrorFeedbackKey);
  allowed.push_back(kZstdKey);

  // Unknown keys first: a typo ("ration") is the likeliest mistake and should be named as such
  // rather than surfacing as a silently used default.
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = false;
    for (const auto& a : allowed) known = known || a == it.key();
    if (!known) {
      throw ConfigError(at(it.key()), "unknown key; expected one of: " + join_names(allowed));
    }
  }

  json out = json::object();
  out[kKindKey] = name;
  for (const auto& p : info->params) {
    const auto value = object.find(p.name);
    if (p.type == CodecParam::Type::kNested) {
      // A nested codec object: resolved (defaults filled, keys checked) like the outer one.
      out[p.name] = resolve(value == object.end() ? p.default_value : *value, at(p.name));
      continue;
    }
    out[p.name] = value == object.end() ? p.default_value : p.check(*value, at(p.name));
  }
  CodecParam ef;
  ef.name = kErrorFeedbackKey;
  ef.type = CodecParam::Type::kBool;
  const auto ef_value = object.find(kErrorFeedbackKey);
  out[kErrorFeedbackKey] = ef_value == object.end()
                               ? json(info->own_error_feedback && info->error_feedback_default)
                               : ef.check(*ef_value, at(kErrorFeedbackKey));
  // `zstd` appears in the resolved object only when given (absent = off), so resolved
  // scenarios written before the stage existed stay unchanged.
  const auto zstd_value = object.find(kZstdKey);
  if (zstd_value != object.end()) out[kZstdKey] = ef.check(*zstd_value, at(kZstdKey));
  if (info->multi_round && out.value(kZstdKey, false)) {
    throw ConfigError(at(kZstdKey), "\"" + name + "\" exchanges several rounds per step; the zstd "
                                    "stage can only wrap single-payload codecs");
  }
  if (info->multi_round && !info->own_error_feedback && out.at(kErrorFeedbackKey).get<bool>()) {
    throw ConfigError(at(kErrorFeedbackKey),
                      "\"" + name + "\" exchanges several rounds per step and cannot be wrapped "
                      "in error feedback");
  }
  // Reading the typed options runs the checks the declaration cannot state (a drop ratio
  // below 1, a list of warm-up densities), so validation refuses what making it would.
  if (info->read) info->read(out, path);
  return out;
}

std::unique_ptr<Codec> CodecRegistry::create(const nlohmann::json& resolved,
                                             const CodecContext& ctx) const {
  // Resolving again is cheap and idempotent, and means a hand-built object gets the same
  // validation as one from a scenario file.
  const json r = resolve(resolved, "codec");
  const CodecInfo* info = find(r.at(kKindKey).get<std::string>());
  std::unique_ptr<Codec> codec = info->make(r, ctx);
  if (!info->own_error_feedback && r.at(kErrorFeedbackKey).get<bool>()) {
    codec = std::make_unique<ErrorFeedback>(std::move(codec));
  }
  if (r.value(kZstdKey, false)) {
    const std::uint64_t max_elements =
        ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel) : kMaxPayloadElements;
    codec = std::make_unique<ZstdStage>(std::move(codec), max_elements);
  }
  return codec;
}

}  // namespace gradwire
