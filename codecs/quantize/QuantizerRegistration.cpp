// Registers the quantisation family: qsgd, natural_dithering, natural, terngrad,
// onebit, signsgd, signum, efsignsgd, fp16, bf16, compose and topk_natural. Wire formats are
// documented in codecs/README.md; the sources of every constant are in the codecs' headers.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codecs/BuiltinCodecs.h"
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

namespace gradwire {

namespace {

using nlohmann::json;

using params::boolean;
using params::choice;
using params::codec;
using params::integer;
using params::number;

/// Methods whose definition includes error feedback (1-bit SGD, EF-signSGD, top-k + natural
/// dithering) always get exactly one ErrorFeedback: here when the object says
/// "error_feedback": false, by the registry when it says true.
std::unique_ptr<Codec> with_feedback(std::unique_ptr<Codec> codec, const json& params) {
  if (params.at("error_feedback").get<bool>()) return codec;
  return std::make_unique<ErrorFeedback>(std::move(codec));
}

std::uint64_t decode_limit(const CodecContext& ctx) {
  return ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel) : std::uint64_t{1} << 32;
}

LevelQuantizer::Norm norm_of(const json& params) {
  return params.at("norm").get<std::string>() == "linf" ? LevelQuantizer::Norm::kLinf
                                                        : LevelQuantizer::Norm::kL2;
}

/// Builds compose's quantiser for the k selected values: no gradient layout (k changes every
/// step) and no error feedback of its own (its residual would change length every step).
std::unique_ptr<Codec> make_value_quantizer(const json& object, const CodecContext& ctx,
                                            const std::string& path) {
  if (object.at("error_feedback").get<bool>()) {
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

}  // namespace

void register_quantizers(CodecRegistry& registry) {
  const std::string unbiased = "Unbiased (stochastic rounding). Not summable.";

  registry.add(CodecInfo{
      "qsgd",
      "QSGD (Alistarh et al. 2017): per bucket the L2 norm (float32), per element a sign and a "
      "level in 0..s with stochastic rounding, bit-packed at 1 + ceil(log2(s + 1)) bits. " + unbiased,
      {integer("levels", 7, 1, 65535,
               "s, the number of non-zero levels l/s; 7 gives 4-bit codes (sign + 3 bits)"),
       // Bucket 512: the bucket size of the QSGD paper's 4- and 8-bit experiments (Sec. 5).
       integer("bucket", 512, 0, 4294967295.0,
               "elements per norm (0: the whole tensor is one bucket)")},
      [](const json& params, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<LevelQuantizer>(
            LevelQuantizer::Levels::kUniform, params.at("levels").get<std::uint32_t>(),
            params.at("bucket").get<std::uint32_t>(), LevelQuantizer::Norm::kL2, ctx.seed, ctx.rank);
      }});

  registry.add(CodecInfo{
      "natural_dithering",
      "natural dithering (Horvath et al. 2019): levels 0, 2^(1-s), ..., 1/2, 1 relative to a "
      "per-bucket norm, stochastic rounding between neighbours; codes as qsgd. " + unbiased,
      {integer("levels", 8, 1, 64, "s, the number of non-zero power-of-two levels"),
       choice("norm", "l2", {"l2", "linf"}, "the norm the levels are relative to"),
       integer("bucket", 512, 0, 4294967295.0, "elements per norm (0: the whole tensor)")},
      [](const json& params, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<LevelQuantizer>(
            LevelQuantizer::Levels::kPowerOfTwo, params.at("levels").get<std::uint32_t>(),
            params.at("bucket").get<std::uint32_t>(), norm_of(params), ctx.seed, ctx.rank);
      }});

  registry.add(CodecInfo{
      "natural",
      "natural compression (Horvath et al. 2019): each value rounded stochastically to a "
      "neighbouring power of two; 9 bits per value (sign + exponent). " + unbiased,
      {},
      [](const json&, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<NaturalCompression>(ctx.seed, ctx.rank);
      }});

  registry.add(CodecInfo{
      "terngrad",
      "TernGrad (Wen et al. 2017): per layer, clip at c sigma, scaler s = max|g|, 2-bit codes "
      "s * sign * Bernoulli(|g|/s). Local scales: decode-then-sum. scaler_sharing: every worker "
      "uses the maximum of all workers' per-layer scales, agreed in an extra round (two kReduce "
      "rounds; codes summed in the compressed domain), or a configured shared_scale (one "
      "round, summable payloads).",
      {number("clip", TernGradCodec::kDefaultClip, 0, 1e9,
              "clip each layer at clip * its standard deviation before ternarising (0: off)"),
       boolean("scaler_sharing", false,
               "every worker uses one shared scale per layer (the maximum over workers)"),
       number("shared_scale", 0, 0, 1e30,
              "with scaler_sharing: 0 agrees on the maximum scale every step (an extra round); "
              "S > 0 uses S for the whole payload instead (elements clipped to [-S, S], no "
              "extra round, summable payloads)")},
      [](const json& params, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        const double clip = params.at("clip").get<double>();
        const bool sharing = params.at("scaler_sharing").get<bool>();
        const double shared = sharing ? params.at("shared_scale").get<double>() : 0.0;
        if (sharing && shared == 0.0) {
          // The agreement is a multi-round exchange: a wrapper would hide it from the
          // collectives, which would then run the single-payload form.
          if (params.at("error_feedback").get<bool>()) {
            throw ConfigError("codec.error_feedback",
                              "terngrad's scale agreement exchanges two rounds per step and "
                              "cannot be wrapped in error feedback (set shared_scale for the "
                              "single-round form)");
          }
          if (params.value("zstd", false)) {
            throw ConfigError("codec.zstd",
                              "terngrad's scale agreement exchanges two rounds per step; the "
                              "zstd stage can only wrap single-payload codecs");
          }
          return std::make_unique<TernGradMaxScaleCodec>(clip, ctx);
        }
        return std::make_unique<TernGradCodec>(clip, shared, ctx);
      }});

  registry.add(CodecInfo{
      "onebit",
      "1-bit SGD (Seide et al. 2014): sign bits plus the means of the non-negative and of the "
      "negative values per column (or per tensor); error feedback always on. Not summable. "
      "Trains best without optimizer momentum (scenarios/codecs/onebit.json: lr 0.4, momentum 0).",
      {choice("granularity", "column", {"column", "tensor"},
              "two reconstruction values per output unit of a weight matrix, or per tensor")},
      [](const json& params, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return with_feedback(
            std::make_unique<OneBitCodec>(params.at("granularity").get<std::string>() == "column", ctx),
            params);
      }});

  registry.add(CodecInfo{
      "signsgd",
      "signSGD with majority vote (Bernstein et al. 2018/2019): 1 bit per element, aggregate = "
      "sign(sum of signs); the optimizer runs without momentum. Use a small lr (~1e-3).",
      {},
      [](const json&, const CodecContext&) -> std::unique_ptr<Codec> {
        return std::make_unique<SignCodec>(0.0);
      }});

  registry.add(CodecInfo{
      "signum",
      "Signum with majority vote (Bernstein et al. 2018, 2019): sign of the worker's momentum "
      "m = beta m + (1 - beta) g, started at m_0 = 0 as in the papers (step 1 votes on "
      "sign(g_1), step 2 on sign(beta (1 - beta) g_1 + (1 - beta) g_2)); aggregate = sign(sum "
      "of signs); momentum lives in the codec. Use a small lr (~1e-3).",
      {number("momentum", SignCodec::kDefaultMomentum, 0, 1,
              "beta in m = beta m + (1 - beta) g, m_0 = 0 (0.9 in the paper)", true)},
      [](const json& params, const CodecContext&) -> std::unique_ptr<Codec> {
        const double beta = params.at("momentum").get<double>();
        if (beta >= 1.0) throw ConfigError("codec.momentum", "expected a number in (0, 1)");
        return std::make_unique<SignCodec>(beta);
      }});

  registry.add(CodecInfo{
      "efsignsgd",
      "EF-signSGD (Karimireddy et al. 2019): (||p||_1 / d) sign(p) per layer with error "
      "feedback (always on). Not summable. The paper's Algorithm 1 has no momentum: run the "
      "optimizer with momentum 0 (scenarios/codecs/efsignsgd.json: lr 0.3).",
      {choice("granularity", "layer", {"layer", "tensor"}, "one scale per layer or per tensor")},
      [](const json& params, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return with_feedback(
            std::make_unique<ScaledSignCodec>(params.at("granularity").get<std::string>() == "layer", ctx),
            params);
      }});

  registry.add(CodecInfo{
      "fp16",
      "IEEE half precision, round to nearest even (12 + 2n bytes). Summable.",
      {},
      [](const json&, const CodecContext&) -> std::unique_ptr<Codec> {
        return std::make_unique<HalfPrecisionCodec>(HalfPrecisionCodec::Format::kFp16);
      }});

  registry.add(CodecInfo{
      "bf16",
      "bfloat16, round to nearest even (12 + 2n bytes). Summable.",
      {},
      [](const json&, const CodecContext&) -> std::unique_ptr<Codec> {
        return std::make_unique<HalfPrecisionCodec>(HalfPrecisionCodec::Format::kBf16);
      }});

  registry.add(CodecInfo{
      "compose",
      "a sparsifier's selection with its values passed through a value quantiser: indices "
      "bit-packed, then the quantiser's payload for the k values. Not summable.",
      {codec("select", json{{"kind", "topk"}, {"ratio", 0.01}},
             "the selecting codec object (any sparsifier: topk, dgc, randomk, ...)"),
       codec("quantize", json{{"kind", "natural_dithering"}, {"bucket", 0}},
             "the codec object encoding the selected values (qsgd, natural_dithering, natural, "
             "fp16, ...); its own error_feedback must be false")},
      [](const json& params, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        auto select = CodecRegistry::builtin().create(params.at("select"), ctx);
        auto quantize = make_value_quantizer(params.at("quantize"), ctx, "codec.quantize");
        return std::make_unique<ComposedCodec>("compose", std::move(select), std::move(quantize),
                                               decode_limit(ctx));
      }});

  registry.add(CodecInfo{
      "topk_natural",
      "top-k + natural dithering of the kept values with error feedback (always on): the "
      "biased compressor of Beznosikov et al. 2020 (= compose of topk and natural_dithering).",
      {number("ratio", 0.01, 0, 1, "fraction of elements kept by top-k: "
              "k = max(1, round(ratio * n)), halves up", true),
       integer("levels", 8, 1, 64, "natural dithering levels s for the kept values"),
       choice("norm", "l2", {"l2", "linf"}, "norm of the kept values the levels are relative to")},
      [](const json& params, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        const json select{{"kind", "topk"}, {"ratio", params.at("ratio")}};
        // The kept values form one bucket: natural dithering of the top-k vector itself.
        const json quantize{{"kind", "natural_dithering"},
                            {"levels", params.at("levels")},
                            {"norm", params.at("norm")},
                            {"bucket", 0}};
        auto codec = std::make_unique<ComposedCodec>(
            "topk_natural", CodecRegistry::builtin().create(select, ctx),
            make_value_quantizer(CodecRegistry::builtin().resolve(quantize, "codec"), ctx, "codec"),
            decode_limit(ctx));
        return with_feedback(std::move(codec), params);
      }});
}

}  // namespace gradwire
