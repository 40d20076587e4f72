// Registers the sparsification family: dgc, gradient_dropping, sdagc, adacomp,
// randomk. Parameters, defaults and their sources are documented in each codec's header and in
// codecs/README.md.
#include <stdexcept>

#include "codecs/BuiltinCodecs.h"
#include "codecs/CodecParams.h"
#include "codecs/CodecRegistry.h"
#include "codecs/sparsify/AdaCompCodec.h"
#include "codecs/sparsify/DgcCodec.h"
#include "codecs/sparsify/GradientDroppingCodec.h"
#include "codecs/sparsify/RandomKCodec.h"
#include "codecs/sparsify/SdagcCodec.h"
#include "codecs/wire/SparseWire.h"
#include "common/ConfigError.h"

namespace gradwire {

namespace {

using nlohmann::json;
using params::boolean;
using params::choice;
using params::integer;
using params::number;

CodecParam values_param() {
  return choice("values", "fp32", {"fp32", "fp16"}, "value precision on the wire (fp16 halves it)");
}

std::uint64_t max_elements(const CodecContext& ctx) {
  return ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel) : std::uint64_t{1} << 32;
}

}  // namespace

void register_sparsifiers(CodecRegistry& registry) {
  (void)max_elements;
  registry.add(CodecInfo{
      "dgc",
      "Deep Gradient Compression (Lin et al. 2018): momentum correction, local clipping, "
      "momentum factor masking, warm-up density schedule; sampled threshold with exact top-k "
      "fallback; 1-D params dense. Compact sparse wire. Runs SGD without optimizer momentum.",
      {number("density", 0.001, 0.0, 1.0, "steady-state fraction sent per tensor (paper: 0.1%): "
              "k = max(1, round(density n)), halves up", true),
       boolean("momentum_correction", true, "accumulate velocity u = m u + g, v += u (and drop optimizer momentum)"),
       number("momentum", 0.9, 0.0, 0.999, "momentum m used by the correction (the training momentum)", false),
       boolean("nesterov", false, "Nesterov momentum correction: u = (u + g) m; v += u + g"),
       boolean("momentum_masking", true, "zero u (and v) where values were sent"),
       number("clip_norm", 5.0, 0.0, 1e30, "local gradient clipping per parameter tensor: its norm capped at "
              "clip_norm * N^-1/2 (0: off; 5: gradwire's choice, the paper gives none)", false),
       boolean("warmup", true, "warm-up: one density of warmup_densities per stage, then density"),
       choice("warmup_densities", "0.25,0.0625,0.015625,0.004", {},
              "comma-separated warm-up densities, one per stage (paper: 25%, 6.25%, 1.5625%, 0.4%)"),
       integer("warmup_stage_steps", 0, 0, 1e300, "steps per warm-up stage (0: one epoch of the worker's shard)"),
       number("sample_ratio", 0.01, 0.0, 1.0, "fraction of each tensor sampled for the threshold "
              "(reference code: 1%): ceil(sample_ratio n), at least 8 per kept element", true),
       boolean("dense_1d", true, "send biases and normalisation parameters dense"),
       values_param()},
      [](const json& p, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        DgcOptions o;
        o.density = p.at("density").get<double>();
        o.momentum_correction = p.at("momentum_correction").get<bool>();
        o.momentum = p.at("momentum").get<double>();
        o.nesterov = p.at("nesterov").get<bool>();
        o.momentum_masking = p.at("momentum_masking").get<bool>();
        o.clip_norm = p.at("clip_norm").get<double>();
        o.warmup = p.at("warmup").get<bool>();
        try {
          o.warmup_densities = parse_density_list(p.at("warmup_densities").get<std::string>());
        } catch (const std::invalid_argument& e) {
          throw ConfigError("codec.warmup_densities", e.what());
        }
        o.warmup_stage_steps = p.at("warmup_stage_steps").get<std::int64_t>();
        o.sample_ratio = p.at("sample_ratio").get<double>();
        o.dense_1d = p.at("dense_1d").get<bool>();
        o.values = value_format_from_string(p.at("values").get<std::string>());
        return std::make_unique<DgcCodec>(o, ctx);
      }});

  registry.add(CodecInfo{
      "gradient_dropping",
      "Gradient Dropping (Aji & Heafield 2017): residual accumulation; per tensor (or over all, "
      "scope global) keep the ceil((1 - drop_ratio) n) largest magnitudes, by a threshold "
      "estimated from a sample rather than an exact sort, so the kept count varies around it. "
      "Compact sparse wire.",
      {number("drop_ratio", 0.99, 0.0, 1.0, "fraction dropped (paper: 99%): a tensor of n keeps "
              "ceil((1 - drop_ratio) n), at least 1; must be < 1", false),
       number("sample_ratio", 0.001, 0.0, 1.0, "fraction sampled for the threshold (paper: 0.1%): "
              "ceil(sample_ratio n) strided positions with a random start, at least "
              "floor(n / kept) (at most 100 at drop_ratio 0.99), at most n; the threshold is the "
              "sample's ceil(samples * kept / n)-th largest", true),
       choice("scope", "layer", {"layer", "global"}, "one threshold per parameter tensor, or one for all"),
       values_param()},
      [](const json& p, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        GradientDroppingOptions o;
        o.drop_ratio = p.at("drop_ratio").get<double>();
        if (o.drop_ratio >= 1.0) throw ConfigError("codec.drop_ratio", "expected a number in [0, 1), got 1");
        o.sample_ratio = p.at("sample_ratio").get<double>();
        o.global = p.at("scope").get<std::string>() == "global";
        o.values = value_format_from_string(p.at("values").get<std::string>());
        return std::make_unique<GradientDroppingCodec>(o, ctx);
      }});

  registry.add(CodecInfo{
      "sdagc",
      "SDAGC (Chen et al. 2020): per-layer threshold lambda * std of the accumulated gradient, "
      "residual accumulation, local clipping, momentum compensation, optional learning-rate "
      "revision. Compact sparse wire. Runs SGD without optimizer momentum.",
      {number("lambda", 3.0, 0.0, 1e6, "threshold in standard deviations of the layer's accumulated gradient", true),
       boolean("momentum_compensation", true, "momentum inside the codec (u = m u + g; v += u), masked where sent"),
       number("momentum", 0.9, 0.0, 0.999, "momentum used by the compensation", false),
       number("clip_norm", 0.0, 0.0, 1e30, "local gradient clipping at clip_norm * N^-1/2 (0: off)", false),
       boolean("lr_revision", false, "cap each layer's sent step at its dense momentum step; rest stays in the residual"),
       values_param()},
      [](const json& p, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        SdagcOptions o;
        o.lambda = p.at("lambda").get<double>();
        o.momentum_compensation = p.at("momentum_compensation").get<bool>();
        o.momentum = p.at("momentum").get<double>();
        o.clip_norm = p.at("clip_norm").get<double>();
        o.lr_revision = p.at("lr_revision").get<bool>();
        o.values = value_format_from_string(p.at("values").get<std::string>());
        return std::make_unique<SdagcCodec>(o, ctx);
      }});

  registry.add(CodecInfo{
      "adacomp",
      "AdaComp (Chen et al. 2018): bin-local residue selection (|G + g| >= bin max |G|), sign + "
      "one scale per tensor on the wire, self-adjusting rate. Not summable.",
      {integer("bin_conv", 50, 1, 1e300, "bin length L_T for convolutional (4-D) weights (paper: 50)"),
       integer("bin_fc", 500, 1, 1e300, "bin length L_T for other parameters: fully connected, recurrent (paper: 500)")},
      [](const json& p, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        AdaCompOptions o;
        o.bin_conv = p.at("bin_conv").get<std::int64_t>();
        o.bin_fc = p.at("bin_fc").get<std::int64_t>();
        return std::make_unique<AdaCompCodec>(o, ctx);
      }});

  registry.add(CodecInfo{
      "randomk",
      "random-k: positions from a seed shared by all workers (same step and slice, same "
      "positions), values only on the wire (12 + 12 + 4k bytes), summable in ring all-reduce. "
      "Use with error_feedback or scale.",
      {number("ratio", 0.01, 0.0, 1.0, "fraction of elements sent: k = max(1, round(ratio * n)), "
              "halves up", true),
       boolean("scale", false, "send (n/k) * values: unbiased without error feedback")},
      [](const json& p, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<RandomKCodec>(p.at("ratio").get<double>(), p.at("scale").get<bool>(), ctx);
      }});
}

}  // namespace gradwire
