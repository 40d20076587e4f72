#include "codecs/CodecRegistry.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "codecs/BuiltinCodecs.h"
#include "codecs/ConfigError.h"
#include "codecs/DenseCodec.h"
#include "codecs/ErrorFeedback.h"
#include "codecs/TopKCodec.h"
#include "codecs/WireFormat.h"
#include "codecs/ZstdStage.h"

namespace gradwire {

namespace {

using nlohmann::json;

// Keys every codec object accepts besides its declared params.
constexpr const char* kKindKey = "kind";
constexpr const char* kErrorFeedbackKey = "error_feedback";
constexpr const char* kZstdKey = "zstd";  // lossless zstd stage over any payload (ZstdStage.h)

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

/// Shortest faithful form of a bound or value: 1 not 1.0, 0.01 not 0.0100000000000000002.
std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

/// A JSON value as the user wrote it, shortened for messages.
std::string describe(const json& value) {
  if (value.is_number_float()) return format_number(value.get<double>());
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string type_word(const json& value) {
  if (value.is_boolean()) return "boolean";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  if (value.is_array()) return "array";
  if (value.is_object()) return "object";
  return "null";
}

std::string range_text(const CodecParam& p) {
  const bool has_min = p.min > -1e300;
  const bool has_max = p.max < 1e300;
  if (has_min && has_max) {
    return std::string(" in ") + (p.min_exclusive ? "(" : "[") + format_number(p.min) + ", " +
           format_number(p.max) + "]";
  }
  if (has_min) return (p.min_exclusive ? " > " : " >= ") + format_number(p.min);
  if (has_max) return " <= " + format_number(p.max);
  return "";
}

bool in_range(const CodecParam& p, double v) {
  if (p.min_exclusive ? !(v > p.min) : !(v >= p.min)) return false;
  return v <= p.max;
}

/// Validates one present parameter value and returns it in canonical form (integers written
/// as 3.0 become 3).
json check_param(const CodecParam& p, const json& value, const std::string& where) {
  switch (p.type) {
    case CodecParam::Type::kNumber: {
      const std::string expected = "expected a number" + range_text(p);
      if (!value.is_number()) {
        throw ConfigError(where, expected + ", got " + describe(value) + " (" + type_word(value) + ")");
      }
      const double v = value.get<double>();
      if (!std::isfinite(v) || !in_range(p, v)) {
        throw ConfigError(where, expected + ", got " + describe(value));
      }
      return value;
    }
    case CodecParam::Type::kInteger: {
      const std::string expected = "expected an integer" + range_text(p);
      if (!value.is_number()) {
        throw ConfigError(where, expected + ", got " + describe(value) + " (" + type_word(value) + ")");
      }
      const double v = value.get<double>();
      if (value.is_number_float() && (!std::isfinite(v) || std::floor(v) != v)) {
        throw ConfigError(where, expected + ", got " + describe(value) + " (not integral)");
      }
      if (!in_range(p, v)) throw ConfigError(where, expected + ", got " + describe(value));
      if (value.is_number_float()) return json(static_cast<std::int64_t>(v));
      return value;
    }
    case CodecParam::Type::kBool:
      if (!value.is_boolean()) {
        throw ConfigError(where, "expected true or false, got " + describe(value) + " (" +
                                     type_word(value) + ")");
      }
      return value;
    case CodecParam::Type::kString: {
      const std::string expected =
          p.choices.empty() ? "expected a string" : "expected one of: " + join(p.choices);
      if (!value.is_string()) {
        throw ConfigError(where, expected + "; got " + describe(value) + " (" + type_word(value) + ")");
      }
      if (!p.choices.empty()) {
        const auto s = value.get<std::string>();
        bool ok = false;
        for (const auto& c : p.choices) ok = ok || c == s;
        if (!ok) throw ConfigError(where, expected + "; got " + describe(value));
      }
      return value;
    }
    case CodecParam::Type::kCodec:
      break;  // resolved by CodecRegistry::resolve, which knows the registered codecs
  }
  throw std::logic_error("codec param '" + p.name + "' has an unknown type");
}

CodecRegistry make_builtin() {
  CodecRegistry r;
  r.add(CodecInfo{
      "none",
      "dense float32, no compression; the baseline. Summable: ring all-reduce adds payloads "
      "without decoding.",
      {},
      [](const json&, const CodecContext&) -> std::unique_ptr<Codec> {
        return std::make_unique<DenseCodec>();
      }});

  CodecParam ratio;
  ratio.name = "ratio";
  ratio.type = CodecParam::Type::kNumber;
  ratio.default_value = TopKCodec::kDefaultRatio;
  ratio.help = "fraction of elements sent: k = max(1, round(ratio * n)) of largest magnitude";
  ratio.min = 0.0;
  ratio.min_exclusive = true;
  ratio.max = 1.0;
  r.add(CodecInfo{
      "topk",
      "top-k sparsification: the k largest-magnitude values with their u32 indices "
      "(12 + 4 + 8k bytes). Not summable. Use with error_feedback.",
      {ratio},
      [](const json& params, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        // Decode never needs more than the worker's gradient length; bounding it keeps a
        // corrupt header from requesting a huge allocation.
        const std::uint64_t max_elements =
            ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel) : std::uint64_t{1} << 32;
        return std::make_unique<TopKCodec>(params.at("ratio").get<double>(), max_elements);
      }});
  register_sparsifiers(r);
  register_quantizers(r);
  register_correlation_codecs(r);
  register_learned_codecs(r);
  return r;
}

}  // namespace

const CodecRegistry& CodecRegistry::builtin() {
  // make_builtin registers none/topk, then each family's registration function
  // (codecs/BuiltinCodecs.h) adds its codecs.
  static const CodecRegistry registry = make_builtin();  // thread-safe one-time init
  return registry;
}

void CodecRegistry::add(CodecInfo info) {
  if (info.name.empty() || !info.make) {
    throw std::logic_error("codec registration needs a name and a make function");
  }
  if (codecs_.count(info.name) != 0) {
    throw std::logic_error("codec '" + info.name + "' registered twice");
  }
  for (const auto& p : info.params) {
    if (p.name == kKindKey || p.name == kErrorFeedbackKey || p.name == kZstdKey) {
      throw std::logic_error("codec '" + info.name + "' declares reserved param '" + p.name + "'");
    }
  }
  const std::string name = info.name;
  codecs_.emplace(name, std::move(info));
}

const CodecInfo* CodecRegistry::find(const std::string& name) const {
  const auto it = codecs_.find(name);
  return it == codecs_.end() ? nullptr : &it->second;
}

std::vector<const CodecInfo*> CodecRegistry::list() const {
  std::vector<const CodecInfo*> out;
  out.reserve(codecs_.size());
  for (const auto& entry : codecs_) out.push_back(&entry.second);
  return out;
}

nlohmann::json CodecRegistry::resolve(const nlohmann::json& object,
                                      const std::string& path) const {
  const auto at = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  std::vector<std::string> names;
  for (const auto& entry : codecs_) names.push_back(entry.first);

  if (!object.is_object()) {
    throw ConfigError(path, "expected an object like {\"kind\": \"topk\", \"ratio\": 0.01}, got " +
                                describe(object));
  }
  const auto kind = object.find(kKindKey);
  if (kind == object.end()) {
    throw ConfigError(at(kKindKey), "missing; expected a codec name, one of: " + join(names));
  }
  if (!kind->is_string()) {
    throw ConfigError(at(kKindKey), "expected a string naming a codec (one of: " + join(names) +
                                        "), got " + describe(*kind));
  }
  const std::string name = kind->get<std::string>();
  const CodecInfo* info = find(name);
  if (info == nullptr) {
    throw ConfigError(at(kKindKey),
                      "unknown codec \"" + name + "\"; expected one of: " + join(names));
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
      throw ConfigError(at(it.key()), "unknown key; expected one of: " + join(allowed));
    }
  }

  json out = json::object();
  out[kKindKey] = name;
  for (const auto& p : info->params) {
    const auto value = object.find(p.name);
    if (p.type == CodecParam::Type::kCodec) {
      // A nested codec object: resolved (defaults filled, keys checked) like the outer one.
      out[p.name] = resolve(value == object.end() ? p.default_value : *value, at(p.name));
      continue;
    }
    out[p.name] = value == object.end() ? p.default_value : check_param(p, *value, at(p.name));
  }
  CodecParam ef;
  ef.name = kErrorFeedbackKey;
  ef.type = CodecParam::Type::kBool;
  const auto ef_value = object.find(kErrorFeedbackKey);
  out[kErrorFeedbackKey] = ef_value == object.end()
                               ? json(info->own_error_feedback && info->error_feedback_default)
                               : check_param(ef, *ef_value, at(kErrorFeedbackKey));
  // `zstd` appears in the resolved object only when given (absent = off), so resolved
  // scenarios written before the stage existed stay unchanged.
  const auto zstd_value = object.find(kZstdKey);
  if (zstd_value != object.end()) out[kZstdKey] = check_param(ef, *zstd_value, at(kZstdKey));
  if (info->multi_round && out.value(kZstdKey, false)) {
    throw ConfigError(at(kZstdKey), "\"" + name + "\" exchanges several rounds per step; the zstd "
                                    "stage can only wrap single-payload codecs");
  }
  if (info->multi_round && !info->own_error_feedback && out.at(kErrorFeedbackKey).get<bool>()) {
    throw ConfigError(at(kErrorFeedbackKey),
                      "\"" + name + "\" exchanges several rounds per step and cannot be wrapped "
                      "in error feedback");
  }
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
