// Registration of Learned Gradient Compression (lgc_ps, lgc_ring): codecs/learned/LgcCodec.h.
#include <algorithm>
#include <memory>
#include <string>

#include "codecs/BuiltinCodecs.h"
#include "codecs/CodecKind.h"
#include "codecs/CodecParams.h"
#include "codecs/CodecRegistry.h"
#include "codecs/learned/LgcCodec.h"
#include "common/FieldTable.h"

namespace gradwire {

namespace {

// Defaults sized for the quickstart (LeNet-5-like CNN, 44k parameters, 600 steps): top-k 1%
// as the quickstart's topk; 100 phase-1 steps give rank 0 enough value vectors to fit a model
// of ~1,100 weights; a code 4x shorter than the values (3 stride-2 layers, 2 code channels),
// the reduction the paper's encoder applies on top of top-k. Adam at 1e-3: on the
// quickstart's phase-1 vectors the training loss (relative squared error) falls from 1.0 to
// ~0.3 and flattens after ~200 iterations, which take a few seconds on one core.
FieldTable<LgcCodec::Options> lgc_keys() {
  using Options = LgcCodec::Options;
  return FieldTable<Options>()
      .add(params::number("ratio", 0.01, 0.0, 1.0,
                          "top-k fraction: the leader's k = max(1, round(ratio * n)) indices are "
                          "shared (halves up)",
                          /*min_exclusive=*/true),
           &Options::ratio)
      .add(params::integer("warmup_steps", 0, 0, 1e9, "dense steps before phase 1 (kSum of the whole gradient)"),
           &Options::warmup_steps)
      .add(params::integer("phase1_steps", 100, 0, 1e9,
                           "top-k steps with a round-robin leader; rank 0 collects the value vectors the "
                           "autoencoder trains on"),
           &Options::phase1_steps)
      .add(params::integer("ae_train_iters", 200, 0, 100000,
                           "Adam iterations (mini-batches of 32 vectors) training the autoencoder at the start of phase 2"),
           &Options::ae_train_iters)
      .add(params::integer("ae_finetune_every", 100, 0, 1e9,
                           "phase 2: every this many steps after its first, rank 0 fine-tunes the "
                           "autoencoder on the vectors it saw since the last training and broadcasts "
                           "the weights again (0: trained once)"),
           &Options::ae_finetune_every)
      .add(params::integer("ae_finetune_iters", 50, 0, 100000,
                           "Adam iterations (mini-batches of 32 vectors) of each fine-tune"),
           &Options::ae_finetune_iters)
      .add(params::number("ae_lr", 1e-3, 0.0, 1.0, "Adam learning rate of the autoencoder", true),
           &Options::ae_lr)
      .add(params::integer("downsample_layers", 3, 1, 8,
                           "stride-2 convolutions in the encoder: the code is 2^layers shorter per channel"),
           &Options::downsample_layers)
      .add(params::integer("code_channels", 2, 1, 64,
                           "channels of the latent code: code floats = code_channels * ceil(k / 2^layers)"),
           &Options::code_channels)
      .add(params::integer("hidden_channels", 8, 1, 64, "channels of the autoencoder's hidden layers"),
           &Options::hidden_channels)
      // Read into `seed` as the offset; the factory adds the scenario seed to it.
      .add(params::integer("seed_offset", 0, 0, 2147483647,
                           "added to the scenario seed for the autoencoder's initial weights"),
           &Options::seed);
}

CodecInfo lgc_info(const std::string& name, LgcCodec::Variant variant, const std::string& summary) {
  return CodecKind<LgcCodec::Options>(
             name, summary, lgc_keys(),
             [variant](LgcCodec::Options o, const CodecContext& ctx) -> std::unique_ptr<Codec> {
               o.variant = variant;
               // Every worker (and the server) derives the same initialisation; only rank 0
               // trains.
               o.seed = ctx.seed * 0x9E3779B97F4A7C15ull + 0x4c4743ull + o.seed;
               return std::make_unique<LgcCodec>(o, ctx.rank, std::max(ctx.workers, 1), ctx.numel);
             })
      .multi_round()
      .own_error_feedback(&LgcCodec::Options::error_feedback, true)
      .info();
}

}  // namespace

void register_learned_codecs(CodecRegistry& registry) {
  registry.add(lgc_info(
      "lgc_ring", LgcCodec::Variant::kRing,
      "Learned Gradient Compression, ring variant (Abrahamyan et al. 2021): a round-robin "
      "leader broadcasts its top-k indices; phase 1 all-reduces the values there, phase 2 a "
      "linear 1-D conv encoder trained online on rank 0 (weights broadcast once) turns them "
      "into codes that are all-reduced and decoded once. Multi-round; own error feedback."));
  registry.add(lgc_info(
      "lgc_ps", LgcCodec::Variant::kParameterServer,
      "Learned Gradient Compression, parameter-server variant (Abrahamyan et al. 2021): the "
      "round-robin leader broadcasts its top-k indices and values; the others send their values "
      "there (phase 1) or autoencoder codes (phase 2) that the aggregator decodes with the "
      "leader's values as side information. Multi-round; own error feedback."));
}

}  // namespace gradwire
