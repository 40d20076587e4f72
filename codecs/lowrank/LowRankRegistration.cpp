// Registers the codecs that exploit correlation in the gradient: powersgd (low rank,
// two all-reduce rounds per step) and gradiveq (a shared PCA basis, summable coefficients).
// Defaults and their sources are in each codec's header and in codecs/README.md.
#include <memory>
#include <string>

#include "codecs/BuiltinCodecs.h"
#include "codecs/CodecKind.h"
#include "codecs/CodecParams.h"
#include "codecs/CodecRegistry.h"
#include "codecs/lowrank/GradiVeQCodec.h"
#include "codecs/lowrank/PowerSgdCodec.h"
#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "common/FieldTable.h"

namespace gradwire {

namespace {

/// GradiVeQ keeps at most as many components as a slice has elements.
void read_components(const JsonFields& f, const ParamSpec& spec, GradiVeQCodec::Options& o) {
  o.components = declared_integer(f, spec);
  if (o.components > o.slice) {
    throw ConfigError(f.path_of(spec.name),
                      "must not exceed slice (" + std::to_string(o.slice) + ")");
  }
}

void write_components(const GradiVeQCodec::Options& o, const ParamSpec& spec,
                      nlohmann::json& out) {
  out[spec.name] = o.components;
}

}  // namespace

void register_correlation_codecs(CodecRegistry& registry) {
  using params::boolean;
  using params::integer;
  using params::number;
  using PowerSgd = PowerSgdCodec::Options;
  using GradiVeQ = GradiVeQCodec::Options;

  registry.add(
      CodecKind<PowerSgd>(
          "powersgd",
          "PowerSGD (Vogels et al. 2019): rank-r factors P, Q of every weight matrix, two all-reduce "
          "rounds per step (P, then Q), warm start, its own error feedback (error_feedback, default "
          "true); biases and matrices saving < min_compression travel dense.",
          FieldTable<PowerSgd>()
              .add(integer("rank", 2, 1, 1024, "approximation rank r (paper's headline: 2)"),
                   &PowerSgd::rank)
              .add(boolean("warm_start", true, "keep Q between steps (one power iteration per step)"),
                   &PowerSgd::warm_start)
              .add(integer("start_step", 0, 0, 1e12, "steps before this one use a plain dense all-reduce "
                           "(PyTorch's start_powerSGD_iter)"),
                   &PowerSgd::start_step)
              .add(number("min_compression", 2.0, 1.0, 1e6, "compress a matrix only when the factors are "
                          "this many times smaller (PyTorch's min_compression_rate)"),
                   &PowerSgd::min_compression)
              .add(number("orthogonalization_epsilon", 0.0, 0.0, 1.0, "added to each column's norm when P "
                          "and the initial Q are orthogonalised (PyTorch's orthogonalization_epsilon, default "
                          "0; e.g. 1e-8 guards all-zero columns but shrinks updates of norm ~1e-8). With 0 a "
                          "column of norm 0 becomes zeros"),
                   &PowerSgd::orthogonalization_epsilon),
          [](const PowerSgd& o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
            return std::make_unique<PowerSgdCodec>(o, ctx);
          })
          .multi_round()
          .own_error_feedback(&PowerSgd::error_feedback, true)
          .info());

  registry.add(
      CodecKind<GradiVeQ>(
          "gradiveq",
          "GradiVeQ (Yu et al. 2018): each layer's gradient cut into slices of d elements, sent as "
          "K coefficients in that layer's PCA basis, fitted on aggregated uncompressed steps (no "
          "basis traffic); coefficients add around the ring (summable) and are decoded once. "
          "Optional QSGD on the coefficients.",
          FieldTable<GradiVeQ>()
              .add(integer("slice", 64, 1, 1 << 16, "d: elements per slice"), &GradiVeQ::slice)
              .add(integer("components", 8, 1, 1 << 16, "K: principal directions kept (ratio d/K)"),
                   read_components, write_components)
              .add(integer("warmup_steps", 50, 1, 1e12, "uncompressed steps before the first fit"),
                   &GradiVeQ::warmup_steps)
              .add(integer("refit_every", 500, 0, 1e12, "compressed steps between refits (0: never)"),
                   &GradiVeQ::refit_every)
              .add(integer("refit_steps", 10, 1, 1e12, "uncompressed steps collected for each refit"),
                   &GradiVeQ::refit_steps)
              .add(integer("qsgd_levels", 0, 0, 65535, "QSGD levels on the coefficients (0: off; then not "
                           "summable)"),
                   &GradiVeQ::qsgd_levels)
              .add(boolean("per_layer", true, "a basis per layer, fitted on that layer's slices (the "
                           "paper's slicing; layers with >= 2 dimensions and one whole slice; the others "
                           "travel dense); false: one basis for the whole flat gradient"),
                   &GradiVeQ::per_layer)
              .add(boolean("pipeline", true, "ring all-reduce with codec time charged: each chunk leaves "
                           "as soon as its slices are encoded, while the next chunk is encoded (the "
                           "paper's pipelining; summable coefficients only); false: chunks wait for the "
                           "whole encode"),
                   &GradiVeQ::pipeline),
          [](GradiVeQ o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
            o.seed = ctx.seed;
            o.rank = ctx.rank;
            return std::make_unique<GradiVeQCodec>(o, ctx.layers, ctx.numel);
          })
          .info());
}

}  // namespace gradwire
