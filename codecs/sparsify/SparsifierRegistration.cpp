// Registers the sparsification family: dgc, gradient_dropping, sdagc, adacomp,
// randomk. Parameters, defaults and their sources are documented in each codec's header and in
// codecs/README.md.
#include <stdexcept>
#include <string>
#include <vector>

#include "codecs/BuiltinCodecs.h"
#include "codecs/CodecKind.h"
#include "codecs/CodecParams.h"
#include "codecs/CodecRegistry.h"
#include "codecs/sparsify/AdaCompCodec.h"
#include "codecs/sparsify/DgcCodec.h"
#include "codecs/sparsify/GradientDroppingCodec.h"
#include "codecs/sparsify/RandomKCodec.h"
#include "codecs/sparsify/SdagcCodec.h"
#include "codecs/wire/SparseWire.h"
#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "common/FieldTable.h"

namespace gradwire {

namespace {

using params::boolean;
using params::choice;
using params::integer;
using params::number;

/// randomk's keys.
struct RandomKOptions {
  double ratio = 0.01;
  bool scale = false;
};

/// DGC's warm-up densities: a comma list in the JSON, the densities in the options.
void read_densities(const JsonFields& f, const ParamSpec& spec, DgcOptions& o) {
  try {
    o.warmup_densities = parse_density_list(declared_string(f, spec));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(f.path_of(spec.name), e.what());
  }
}

void write_densities(const DgcOptions& o, const ParamSpec& spec, nlohmann::json& out) {
  std::string text;
  for (const double d : o.warmup_densities) {
    text += (text.empty() ? "" : ",") + nlohmann::json(d).dump();
  }
  out[spec.name] = text;
}

/// gradient_dropping keeps at least one value per tensor, so the declared [0, 1] is narrowed
/// to [0, 1) here.
void read_drop_ratio(const JsonFields& f, const ParamSpec& spec, GradientDroppingOptions& o) {
  o.drop_ratio = declared_number(f, spec);
  if (o.drop_ratio >= 1.0) throw ConfigError(f.path_of(spec.name), "expected a number in [0, 1), got 1");
}

void write_drop_ratio(const GradientDroppingOptions& o, const ParamSpec& spec, nlohmann::json& out) {
  out[spec.name] = o.drop_ratio;
}

}  // namespace

void register_sparsifiers(CodecRegistry& registry) {
  FieldTable<DgcOptions> dgc;
  dgc.add(number("density", 0.001, 0.0, 1.0, "steady-state fraction sent per tensor (paper: 0.1%): "
              "k = max(1, round(density n)), halves up", true), &DgcOptions::density)
      .add(boolean("momentum_correction", true, "accumulate velocity u = m u + g, v += u (and drop optimizer momentum)"),
           &DgcOptions::momentum_correction)
      .add(number("momentum", 0.9, 0.0, 0.999, "momentum m used by the correction (the training momentum)", false),
           &DgcOptions::momentum)
      .add(boolean("nesterov", false, "Nesterov momentum correction: u = (u + g) m; v += u + g"),
           &DgcOptions::nesterov)
      .add(boolean("momentum_masking", true, "zero u (and v) where values were sent"),
           &DgcOptions::momentum_masking)
      .add(number("clip_norm", 5.0, 0.0, 1e30, "local gradient clipping per parameter tensor: its norm capped at "
                  "clip_norm * N^-1/2 (0: off; 5: gradwire's choice, the paper gives none)", false),
           &DgcOptions::clip_norm)
      .add(boolean("warmup", true, "warm-up: one density of warmup_densities per stage, then density"),
           &DgcOptions::warmup)
      .add(choice("warmup_densities", "0.25,0.0625,0.015625,0.004", {},
              "comma-separated warm-up densities, one per stage (paper: 25%, 6.25%, 1.5625%, 0.4%)"),
           read_densities, write_densities)
      .add(integer("warmup_stage_steps", 0, 0, 1e300, "steps per warm-up stage (0: one epoch of the worker's shard)"),
           &DgcOptions::warmup_stage_steps)
      .add(number("sample_ratio", 0.01, 0.0, 1.0, "fraction of each tensor sampled for the threshold "
              "(reference code: 1%): ceil(sample_ratio n), at least 8 per kept element", true),
           &DgcOptions::sample_ratio)
      .add(boolean("dense_1d", true, "send biases and normalisation parameters dense"),
           &DgcOptions::dense_1d);
  add_values(dgc, &DgcOptions::values);
  registry.add(CodecKind<DgcOptions>(
      "dgc",
      "Deep Gradient Compression (Lin et al. 2018): momentum correction, local clipping, "
      "momentum factor masking, warm-up density schedule; sampled threshold with exact top-k "
      "fallback; 1-D params dense. Compact sparse wire. Runs SGD without optimizer momentum.",
      dgc,
      [](const DgcOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<DgcCodec>(o, ctx);
      }).info());

  FieldTable<GradientDroppingOptions> dropping;
  dropping
      .add(number("drop_ratio", 0.99, 0.0, 1.0, "fraction dropped (paper: 99%): a tensor of n keeps "
              "ceil((1 - drop_ratio) n), at least 1; must be < 1", false),
           read_drop_ratio, write_drop_ratio)
      .add(number("sample_ratio", 0.001, 0.0, 1.0, "fraction sampled for the threshold (paper: 0.1%): "
              "ceil(sample_ratio n) strided positions with a random start, at least "
              "floor(n / kept) (at most 100 at drop_ratio 0.99), at most n; the threshold is the "
              "sample's ceil(samples * kept / n)-th largest", true),
           &GradientDroppingOptions::sample_ratio);
  add_choice(dropping,
             choice("scope", "layer", {"layer", "global"}, "one threshold per parameter tensor, or one for all"),
             &GradientDroppingOptions::global, std::vector<bool>{false, true});
  add_values(dropping, &GradientDroppingOptions::values);
  registry.add(CodecKind<GradientDroppingOptions>(
      "gradient_dropping",
      "Gradient Dropping (Aji & Heafield 2017): residual accumulation; per tensor (or over all, "
      "scope global) keep the ceil((1 - drop_ratio) n) largest magnitudes, by a threshold "
      "estimated from a sample rather than an exact sort, so the kept count varies around it. "
      "Compact sparse wire.",
      dropping,
      [](const GradientDroppingOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<GradientDroppingCodec>(o, ctx);
      }).info());

  FieldTable<SdagcOptions> sdagc;
  sdagc.add(number("lambda", 2.0, 0.0, 1e6, "threshold in standard deviations of the layer's accumulated gradient", true),
            &SdagcOptions::lambda)
      .add(boolean("momentum_compensation", true, "momentum inside the codec (u = m u + g; v += u), masked where sent"),
           &SdagcOptions::momentum_compensation)
      .add(number("momentum", 0.9, 0.0, 0.999, "momentum used by the compensation", false),
           &SdagcOptions::momentum)
      .add(number("clip_norm", 5.0, 0.0, 1e30, "local gradient clipping of the encoded gradient at clip_norm * N^-1/2 (5: DGC's default; 0: off)", false),
           &SdagcOptions::clip_norm)
      .add(boolean("lr_revision", true, "cap each layer's sent step at its dense momentum step; rest stays in the residual (false: off)"),
           &SdagcOptions::lr_revision);
  add_values(sdagc, &SdagcOptions::values);
  registry.add(CodecKind<SdagcOptions>(
      "sdagc",
      "SDAGC (Chen et al. 2020): per-layer threshold lambda * std of the accumulated gradient, "
      "residual accumulation, local clipping, momentum compensation and learning-rate revision "
      "(all on by default). Compact sparse wire. Runs SGD without optimizer momentum.",
      sdagc,
      [](const SdagcOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<SdagcCodec>(o, ctx);
      }).info());

  registry.add(CodecKind<AdaCompOptions>(
      "adacomp",
      "AdaComp (Chen et al. 2018): bin-local residue selection (|G + g| >= bin max |G|), sign + "
      "one scale per tensor on the wire, self-adjusting rate. Not summable.",
      FieldTable<AdaCompOptions>()
          .add(integer("bin_conv", 50, 1, 1e300, "bin length L_T for convolutional (4-D) weights (paper: 50)"),
               &AdaCompOptions::bin_conv)
          .add(integer("bin_fc", 500, 1, 1e300, "bin length L_T for other parameters: fully connected, recurrent (paper: 500)"),
               &AdaCompOptions::bin_fc),
      [](const AdaCompOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<AdaCompCodec>(o, ctx);
      }).info());

  registry.add(CodecKind<RandomKOptions>(
      "randomk",
      "random-k: positions from a seed shared by all workers (same step and slice, same "
      "positions), values only on the wire (12 + 12 + 4k bytes), summable in ring all-reduce. "
      "Use with error_feedback or scale.",
      FieldTable<RandomKOptions>()
          .add(number("ratio", 0.01, 0.0, 1.0, "fraction of elements sent: k = max(1, round(ratio * n)), "
              "halves up", true), &RandomKOptions::ratio)
          .add(boolean("scale", false, "send (n/k) * values: unbiased without error feedback"),
               &RandomKOptions::scale),
      [](const RandomKOptions& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        return std::make_unique<RandomKCodec>(o.ratio, o.scale, ctx);
      }).info());
}

}  // namespace gradwire
