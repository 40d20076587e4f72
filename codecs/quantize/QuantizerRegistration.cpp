// Registers the quantisation family: qsgd, natural_dithering, natural, terngrad,
// onebit, signsgd, signum, efsignsgd, fp16, bf16, compose and topk_natural. Wire formats are
// documented in codecs/README.md; the sources of every constant are in the codecs' headers.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codecs/BuiltinCodecs.h"
#include "codecs/CodecKind.h"
#include "codecs/CodecParams.h"
#include "codecs/CodecRegistry.h"
#include "codecs/ComposedCodec.h"
#include "codecs/ErrorFeedback.h"
#include "codecs/quantize/HalfPrecisionCodec.h"
#include "codecs/quantize/LevelQuantizer.h"
#include "codecs/quantize/NaturalCompression.h"
#include "codecs/quantize/OneBitCodec.h"
#include "codecs/quantize/ScaledSignCodec.h"
#include "codecs/quantize/SignCodec.h"
#include "codecs/quantize/TernGradCodec.h"
#include "codecs/quantize/TernGradMaxScaleCodec.h"
#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "common/FieldTable.h"

namespace gradwire {

namespace {

using nlohmann::json;

using params::boolean;
using params::choice;
using params::codec;
using params::integer;
using params::number;

/// qsgd's and natural_dithering's keys (qsgd's norm is always L2).
struct LevelOptions {
  std::uint32_t levels = 7;
  std::uint32_t bucket = 512;
  LevelQuantizer::Norm norm = LevelQuantizer::Norm::kL2;
};

struct TernGradOptions {
  double clip = TernGradCodec::kDefaultClip;
  bool scaler_sharing = false;
  double shared_scale = 0;
  bool error_feedback = false;
  bool zstd = false;
};

/// onebit's and efsignsgd's keys: one scale per unit (column, layer) or per tensor.
struct SignGranularity {
  bool per_unit = true;
  bool error_feedback = false;
};

struct SignumOptions {
  double momentum = SignCodec::kDefaultMomentum;
};

struct ComposeOptions {
  json select;
  json quantize;
};

/// topk_natural's keys; the norm is handed on to natural_dithering by name.
struct TopkNaturalOptions {
  double ratio = 0.01;
  std::int64_t levels = 8;
  std::string norm = "l2";
  bool error_feedback = false;
};

/// The norms natural dithering's levels can be relative to, in the order of the choices.
const std::vector<LevelQuantizer::Norm> kNorms{LevelQuantizer::Norm::kL2,
                                               LevelQuantizer::Norm::kLinf};

/// Methods whose definition includes error feedback (1-bit SGD, EF-signSGD, top-k + natural
/// dithering) always get exactly one ErrorFeedback: here when the object says
/// "error_feedback": false, by the registry when it says true.
std::unique_ptr<Codec> with_feedback(std::unique_ptr<Codec> codec, bool registry_adds_it) {
  if (registry_adds_it) return codec;
  return std::make_unique<ErrorFeedback>(std::move(codec));
}

std::uint64_t decode_limit(const CodecContext& ctx) {
  return ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel) : std::uint64_t{1} << 32;
}

/// Builds compose's quantiser for the k selected values: no gradient layout (k changes every
/// step) and no error feedback of its own (its residual would change length every step).
std::unique_ptr<Codec> make_value_quantizer(const json& object, const CodecContext& ctx,
                                            const std::string& path) {
  if (object.at(CodecRegistry::kErrorFeedbackKey).get<bool>()) {
    throw ConfigError(path + ".error_feedback",
                      "a compose quantiser cannot keep its own error feedback (the number of "
                      "selected values changes every step); set error_feedback on the compose "
                      "object instead");
  }
  CodecContext sub = ctx;
  sub.numel = ctx.numel;  // k <= n: the gradient length still bounds what it may decode
  sub.layers.clear();
  return CodecRegistry::builtin().create(object, sub);
}

/// Signum's beta must stay below 1 (the declaration's bound is inclusive).
void read_beta(const JsonFields& f, const ParamSpec& spec, SignumOptions& o) {
  o.momentum = declared_number(f, spec);
  if (o.momentum >= 1.0) throw ConfigError(f.path_of(spec.name), "expected a number in (0, 1)");
}

void write_beta(const SignumOptions& o, const ParamSpec& spec, json& out) {
  out[spec.name] = o.momentum;
}

}  // namespace

void register_quantizers(CodecRegistry& registry) {
  const std::string unbiased = "Unbiased (stochastic rounding). Not summable.";

  registry.add(CodecKind<LevelOptions>(
      "qsgd",
      "QSGD (Alistarh et al. 2017): per bucket the L2 norm (float32), per element a sign and a "
      "level in 0..s with stochastic rounding, bit-packed at 1 + ceil(log2(s + 1)) bits. " + unbiased,
      FieldTable<LevelOptions>()
          .add(integer("levels", 7, 1, 65535,
                       "s, the number of non-zero levels l/s; 7 gives 4-bit codes (sign + 3 bits)"),
               &LevelOptions::levels)
          // Bucket 512: the bucket size of the QSGD paper's 4- and 8-bit experiments (Sec. 5).
          .add(integer("bucket", 512, 0, 4294967295.0,
                       "elements per norm (0: the whole tensor is one bucket)"),
               &LevelOptions::bucket),
      [](const LevelOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<LevelQuantizer>(LevelQuantizer::Levels::kUniform, o.levels,
                                                o.bucket, o.norm, ctx.seed, ctx.rank);
      }).info());

  FieldTable<LevelOptions> dithering;
  dithering.add(integer("levels", 8, 1, 64, "s, the number of non-zero power-of-two levels"),
                &LevelOptions::levels);
  add_choice(dithering, choice("norm", "l2", {"l2", "linf"}, "the norm the levels are relative to"),
             &LevelOptions::norm, kNorms);
  dithering.add(integer("bucket", 512, 0, 4294967295.0, "elements per norm (0: the whole tensor)"),
                &LevelOptions::bucket);
  registry.add(CodecKind<LevelOptions>(
      "natural_dithering",
      "natural dithering (Horvath et al. 2019): levels 0, 2^(1-s), ..., 1/2, 1 relative to a "
      "per-bucket norm, stochastic rounding between neighbours; codes as qsgd. " + unbiased,
      dithering,
      [](const LevelOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<LevelQuantizer>(LevelQuantizer::Levels::kPowerOfTwo, o.levels,
                                                o.bucket, o.norm, ctx.seed, ctx.rank);
      }).info());

  registry.add(CodecKind<>(
      "natural",
      "natural compression (Horvath et al. 2019): each value rounded stochastically to a "
      "neighbouring power of two; 9 bits per value (sign + exponent). " + unbiased,
      {},
      [](const std::monostate&, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<NaturalCompression>(ctx.seed, ctx.rank);
      }).info());

  registry.add(
      CodecKind<TernGradOptions>(
          "terngrad",
          "TernGrad (Wen et al. 2017): per layer, clip at c sigma, scaler s = max|g|, 2-bit codes "
          "s * sign * Bernoulli(|g|/s). Local scales: decode-then-sum. scaler_sharing: every worker "
          "uses the maximum of all workers' per-layer scales, agreed in an extra round (two kReduce "
          "rounds; codes summed in the compressed domain), or a configured shared_scale (one "
          "round, summable payloads).",
          FieldTable<TernGradOptions>()
              .add(number("clip", TernGradCodec::kDefaultClip, 0, 1e9,
                          "clip each layer at clip * its standard deviation before ternarising (0: off)"),
                   &TernGradOptions::clip)
              .add(boolean("scaler_sharing", false,
                           "every worker uses one shared scale per layer (the maximum over workers)"),
                   &TernGradOptions::scaler_sharing)
              .add(number("shared_scale", 0, 0, 1e30,
                          "with scaler_sharing: 0 agrees on the maximum scale every step (an extra round); "
                          "S > 0 uses S for the whole payload instead (elements clipped to [-S, S], no "
                          "extra round, summable payloads)"),
                   &TernGradOptions::shared_scale),
          [](const TernGradOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
            const double shared = o.scaler_sharing ? o.shared_scale : 0.0;
            if (o.scaler_sharing && shared == 0.0) {
              // The agreement is a multi-round exchange: a wrapper would hide it from the
              // collectives, which would then run the single-payload form.
              if (o.error_feedback) {
                throw ConfigError("codec.error_feedback",
                                  "terngrad's scale agreement exchanges two rounds per step and "
                                  "cannot be wrapped in error feedback (set shared_scale for the "
                                  "single-round form)");
              }
              if (o.zstd) {
                throw ConfigError("codec.zstd",
                                  "terngrad's scale agreement exchanges two rounds per step; the "
                                  "zstd stage can only wrap single-payload codecs");
              }
              return std::make_unique<TernGradMaxScaleCodec>(o.clip, ctx);
            }
            return std::make_unique<TernGradCodec>(o.clip, shared, ctx);
          })
          .reads_error_feedback(&TernGradOptions::error_feedback)
          .reads_zstd(&TernGradOptions::zstd)
          .info());

  FieldTable<SignGranularity> columns;
  add_choice(columns,
             choice("granularity", "column", {"column", "tensor"},
                    "two reconstruction values per output unit of a weight matrix, or per tensor"),
             &SignGranularity::per_unit, std::vector<bool>{true, false});
  registry.add(CodecKind<SignGranularity>(
      "onebit",
      "1-bit SGD (Seide et al. 2014): sign bits plus the means of the non-negative and of the "
      "negative values per column (or per tensor); error feedback always on. Not summable. "
      "Trains best without optimizer momentum (scenarios/codecs/onebit.json: lr 0.4, momentum 0).",
      columns,
      [](const SignGranularity& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return with_feedback(std::make_unique<OneBitCodec>(o.per_unit, ctx), o.error_feedback);
      })
      .reads_error_feedback(&SignGranularity::error_feedback)
      .info());

  registry.add(CodecKind<>(
      "signsgd",
      "signSGD with majority vote (Bernstein et al. 2018/2019): 1 bit per element, aggregate = "
      "sign(sum of signs); the optimizer runs without momentum. Use a small lr (~1e-3).",
      {},
      [](const std::monostate&, const CodecContext&) -> std::unique_ptr<Codec> {
        return std::make_unique<SignCodec>(0.0);
      }).info());

  registry.add(CodecKind<SignumOptions>(
      "signum",
      "Signum with majority vote (Bernstein et al. 2018, 2019): sign of the worker's momentum "
      "m = beta m + (1 - beta) g, started at m_0 = 0 as in the papers (step 1 votes on "
      "sign(g_1), step 2 on sign(beta (1 - beta) g_1 + (1 - beta) g_2)); aggregate = sign(sum "
      "of signs); momentum lives in the codec. Use a small lr (~1e-3).",
      FieldTable<SignumOptions>().add(
          number("momentum", SignCodec::kDefaultMomentum, 0, 1,
                 "beta in m = beta m + (1 - beta) g, m_0 = 0 (0.9 in the paper)", true),
          read_beta, write_beta),
      [](const SignumOptions& o, const CodecContext&) -> std::unique_ptr<Codec> {
        return std::make_unique<SignCodec>(o.momentum);
      }).info());

  FieldTable<SignGranularity> layers;
  add_choice(layers,
             choice("granularity", "layer", {"layer", "tensor"}, "one scale per layer or per tensor"),
             &SignGranularity::per_unit, std::vector<bool>{true, false});
  registry.add(CodecKind<SignGranularity>(
      "efsignsgd",
      "EF-signSGD (Karimireddy et al. 2019): (||p||_1 / d) sign(p) per layer with error "
      "feedback (always on). Not summable. The paper's Algorithm 1 has no momentum: run the "
      "optimizer with momentum 0 (scenarios/codecs/efsignsgd.json: lr 0.3).",
      layers,
      [](const SignGranularity& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return with_feedback(std::make_unique<ScaledSignCodec>(o.per_unit, ctx), o.error_feedback);
      })
      .reads_error_feedback(&SignGranularity::error_feedback)
      .info());

  registry.add(CodecKind<>(
      "fp16",
      "IEEE half precision, round to nearest even (12 + 2n bytes). Summable.",
      {},
      [](const std::monostate&, const CodecContext&) -> std::unique_ptr<Codec> {
        return std::make_unique<HalfPrecisionCodec>(HalfPrecisionCodec::Format::kFp16);
      }).info());

  registry.add(CodecKind<>(
      "bf16",
      "bfloat16, round to nearest even (12 + 2n bytes). Summable.",
      {},
      [](const std::monostate&, const CodecContext&) -> std::unique_ptr<Codec> {
        return std::make_unique<HalfPrecisionCodec>(HalfPrecisionCodec::Format::kBf16);
      }).info());

  FieldTable<ComposeOptions> compose;
  add_codec(compose,
            codec("select", json{{"kind", "topk"}, {"ratio", 0.01}},
                  "the selecting codec object (any sparsifier: topk, dgc, randomk, ...)"),
            &ComposeOptions::select);
  add_codec(compose,
            codec("quantize", json{{"kind", "natural_dithering"}, {"bucket", 0}},
                  "the codec object encoding the selected values (qsgd, natural_dithering, natural, "
                  "fp16, ...); its own error_feedback must be false"),
            &ComposeOptions::quantize);
  registry.add(CodecKind<ComposeOptions>(
      "compose",
      "a sparsifier's selection with its values passed through a value quantiser: indices "
      "bit-packed, then the quantiser's payload for the k values. Not summable.",
      compose,
      [](const ComposeOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        auto select = CodecRegistry::builtin().create(o.select, ctx);
        auto quantize = make_value_quantizer(o.quantize, ctx, "codec.quantize");
        return std::make_unique<ComposedCodec>("compose", std::move(select), std::move(quantize),
                                               decode_limit(ctx));
      }).info());

  registry.add(
      CodecKind<TopkNaturalOptions>(
          "topk_natural",
          "top-k + natural dithering of the kept values with error feedback (always on): the "
          "biased compressor of Beznosikov et al. 2020 (= compose of topk and natural_dithering).",
          FieldTable<TopkNaturalOptions>()
              .add(number("ratio", 0.01, 0, 1, "fraction of elements kept by top-k: "
                          "k = max(1, round(ratio * n)), halves up", true),
                   &TopkNaturalOptions::ratio)
              .add(integer("levels", 8, 1, 64, "natural dithering levels s for the kept values"),
                   &TopkNaturalOptions::levels)
              .add(choice("norm", "l2", {"l2", "linf"}, "norm of the kept values the levels are relative to"),
                   &TopkNaturalOptions::norm),
          [](const TopkNaturalOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
            const json select{{"kind", "topk"}, {"ratio", o.ratio}};
            // The kept values form one bucket: natural dithering of the top-k vector itself.
            const json quantize{{"kind", "natural_dithering"},
                                {"levels", o.levels},
                                {"norm", o.norm},
                                {"bucket", 0}};
            auto codec = std::make_unique<ComposedCodec>(
                "topk_natural", CodecRegistry::builtin().create(select, ctx),
                make_value_quantizer(CodecRegistry::builtin().resolve(quantize, "codec"), ctx, "codec"),
                decode_limit(ctx));
            return with_feedback(std::move(codec), o.error_feedback);
          })
          .reads_error_feedback(&TopkNaturalOptions::error_feedback)
          .info());
}

}  // namespace gradwire
