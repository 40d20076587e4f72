// Registers the codecs that exploit correlation in the gradient: powersgd (low rank,
// two all-reduce rounds per step) and gradiveq (a shared PCA basis, summable coefficients).
// Defaults and their sources are in each codec's header and in codecs/README.md.
#include "codecs/BuiltinCodecs.h"
#include "codecs/CodecParams.h"
#include "codecs/CodecRegistry.h"
#include "codecs/lowrank/GradiVeQCodec.h"
#include "codecs/lowrank/PowerSgdCodec.h"
#include "common/ConfigError.h"

namespace gradwire {

void register_correlation_codecs(CodecRegistry& registry) {
  using nlohmann::json;
  using params::boolean;
  using params::integer;
  using params::number;

  CodecInfo powersgd{
      "powersgd",
      "PowerSGD (Vogels et al. 2019): rank-r factors P, Q of every weight matrix, two all-reduce "
      "rounds per step (P, then Q), warm start, its own error feedback (error_feedback, default "
      "true); biases and matrices saving < min_compression travel dense.",
      {integer("rank", 2, 1, 1024, "approximation rank r (paper's headline: 2)"),
       boolean("warm_start", true, "keep Q between steps (one power iteration per step)"),
       integer("start_step", 0, 0, 1e12, "steps before this one use a plain dense all-reduce "
               "(PyTorch's start_powerSGD_iter)"),
       number("min_compression", 2.0, 1.0, 1e6, "compress a matrix only when the factors are "
              "this many times smaller (PyTorch's min_compression_rate)"),
       number("orthogonalization_epsilon", 0.0, 0.0, 1.0, "added to each column's norm when P "
              "and the initial Q are orthogonalised (PyTorch's orthogonalization_epsilon, default "
              "0; e.g. 1e-8 guards all-zero columns but shrinks updates of norm ~1e-8). With 0 a "
              "column of norm 0 becomes zeros")},
      [](const json& p, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        PowerSgdCodec::Options o;
        o.rank = p.at("rank").get<int>();
        o.warm_start = p.at("warm_start").get<bool>();
        o.start_step = p.at("start_step").get<std::int64_t>();
        o.min_compression = p.at("min_compression").get<double>();
        o.orthogonalization_epsilon = p.at("orthogonalization_epsilon").get<double>();
        o.error_feedback = p.at("error_feedback").get<bool>();
        return std::make_unique<PowerSgdCodec>(o, ctx);
      }};
  powersgd.multi_round = true;
  powersgd.own_error_feedback = true;
  powersgd.error_feedback_default = true;
  registry.add(std::move(powersgd));

  registry.add(CodecInfo{
      "gradiveq",
      "GradiVeQ (Yu et al. 2018): each layer's gradient cut into slices of d elements, sent as "
      "K coefficients in that layer's PCA basis, fitted on aggregated uncompressed steps (no "
      "basis traffic); coefficients add around the ring (summable) and are decoded once. "
      "Optional QSGD on the coefficients.",
      {integer("slice", 64, 1, 1 << 16, "d: elements per slice"),
       integer("components", 8, 1, 1 << 16, "K: principal directions kept (ratio d/K)"),
       integer("warmup_steps", 50, 1, 1e12, "uncompressed steps before the first fit"),
       integer("refit_every", 500, 0, 1e12, "compressed steps between refits (0: never)"),
       integer("refit_steps", 10, 1, 1e12, "uncompressed steps collected for each refit"),
       integer("qsgd_levels", 0, 0, 65535, "QSGD levels on the coefficients (0: off; then not "
               "summable)"),
       boolean("per_layer", true, "a basis per layer, fitted on that layer's slices (the "
               "paper's slicing; layers with >= 2 dimensions and one whole slice; the others "
               "travel dense); false: one basis for the whole flat gradient")},
      [](const json& p, const CodecContext& ctx) -> std::unique_ptr<Codec> {
        GradiVeQCodec::Options o;
        o.slice = p.at("slice").get<std::int64_t>();
        o.components = p.at("components").get<std::int64_t>();
        if (o.components > o.slice) {
          throw ConfigError("codec.components", "must not exceed slice (" +
                                                    std::to_string(o.slice) + ")");
        }
        o.warmup_steps = p.at("warmup_steps").get<std::int64_t>();
        o.refit_every = p.at("refit_every").get<std::int64_t>();
        o.refit_steps = p.at("refit_steps").get<std::int64_t>();
        o.qsgd_levels = p.at("qsgd_levels").get<std::uint32_t>();
        o.per_layer = p.at("per_layer").get<bool>();
        o.seed = ctx.seed;
        o.rank = ctx.rank;
        return std::make_unique<GradiVeQCodec>(o, ctx.layers, ctx.numel);
      }});
}

}  // namespace gradwire
