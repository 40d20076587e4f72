#include "codecs/learned/LgcCodec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/RatioCounts.h"
#include "codecs/learned/LgcAutoencoder.h"
#include "codecs/sparsify/TopKCodec.h"
#include "codecs/wire/SparseWire.h"
#include "codecs/wire/TensorWire.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

// Indices travel as u32 (as in every sparse format here): at most 2^32 elements.
constexpr std::uint64_t kMaxAddressable = std::uint64_t{1} << 32;
constexpr std::uint8_t kVariantRing = 0;
constexpr std::uint8_t kVariantPs = 1;

using Kind = LgcCodec::PayloadKind;

const char* kind_name(std::uint8_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::kIndices: return "indices";
    case Kind::kIndicesValues: return "indices+values";
    case Kind::kValues: return "values";
    case Kind::kCode: return "code";
    case Kind::kLeader: return "leader";
    case Kind::kWeights: return "weights";
  }
  return "unknown";
}

/// Header + kind; checks the element count against `max_elements` before anything is sized
/// from it.
std::uint8_t read_prefix(ByteReader& r, const std::string& codec, std::uint64_t max_elements,
                         std::uint64_t& n) {
  const PayloadHeader h = read_header(r, CodecId::kLgc, codec, LgcCodec::kFormatVersion);
  const std::uint64_t limit = std::min(max_elements, kMaxAddressable);
  if (h.numel > limit) {
    r.fail("element count " + std::to_string(h.numel) + " exceeds this decoder's limit of " +
           std::to_string(limit));
  }
  n = h.numel;
  const std::uint8_t kind = r.u8("payload kind");
  if (kind < 1 || kind > 6) r.fail("unknown payload kind " + std::to_string(kind) + " (expected 1 to 6)");
  return kind;
}

struct ParsedIndices {
  std::uint64_t n = 0;
  std::uint32_t leader = 0;
  std::vector<std::uint32_t> indices;
  std::vector<float> values;  // empty for kIndices
};

/// Parses a kIndices / kIndicesValues payload completely (exact size, every index < n and
/// strictly ascending). `expected_k` < 0: any k <= n.
ParsedIndices parse_indices(ByteSpan payload, const std::string& codec, std::uint64_t max_elements,
                            int workers, std::int64_t expected_numel, std::int64_t expected_k,
                            int want_values /* 1 yes, 0 no, -1 either */, const char* what) {
  ByteReader r(payload, what);
  ParsedIndices p;
  const std::uint8_t kind = read_prefix(r, codec, max_elements, p.n);
  const bool with_values = kind == static_cast<std::uint8_t>(Kind::kIndicesValues);
  if (kind != static_cast<std::uint8_t>(Kind::kIndices) && !with_values) {
    r.fail(std::string("expected an indices payload, got kind ") + std::to_string(kind) + " (" +
           kind_name(kind) + ")");
  }
  if (want_values >= 0 && with_values != (want_values == 1)) {
    r.fail(std::string("expected ") + (want_values == 1 ? "indices with values" : "indices only") +
           ", got " + kind_name(kind));
  }
  if (expected_numel > 0 && p.n != static_cast<std::uint64_t>(expected_numel)) {
    r.fail("element count " + std::to_string(p.n) + " does not match the gradient's " +
           std::to_string(expected_numel));
  }
  p.leader = r.u32("leader");
  if (p.leader >= static_cast<std::uint32_t>(std::max(workers, 1))) {
    r.fail("leader " + std::to_string(p.leader) + " is not a rank of " + std::to_string(workers) +
           " workers");
  }
  const std::uint64_t k = r.u32("k");
  if (k > p.n) r.fail("k = " + std::to_string(k) + " exceeds the element count " + std::to_string(p.n));
  if (expected_k >= 0 && k != static_cast<std::uint64_t>(expected_k)) {
    r.fail("k = " + std::to_string(k) + " but this codec keeps " + std::to_string(expected_k));
  }
  const std::uint8_t coding = r.u8("index coding");
  if (coding > 3) r.fail("unknown index coding " + std::to_string(coding) + " (expected 0 to 3)");
  const std::uint64_t section = r.u32("index bytes");
  const std::uint64_t value_bytes = with_values ? 4 * k : 0;
  if (r.remaining() != section + value_bytes) {
    r.fail("size mismatch: " + std::to_string(section) + " index bytes + " +
           std::to_string(value_bytes) + " value bytes after offset " + std::to_string(r.offset()) +
           ", have " + std::to_string(r.remaining()));
  }
  p.indices = read_index_section(r, static_cast<IndexCoding>(coding), static_cast<std::size_t>(k),
                                 static_cast<std::size_t>(section), p.n);
  if (with_values) {
    const std::uint8_t* v = r.take(static_cast<std::size_t>(k), 4, "values");
    p.values.resize(static_cast<std::size_t>(k));
    for (std::size_t j = 0; j < k; ++j) p.values[j] = load_f32_le(v + 4 * j);
  }
  r.expect_end();
  return p;
}

torch::Tensor to_tensor(const std::vector<float>& v) {
  torch::Tensor t = torch::empty({static_cast<std::int64_t>(v.size())}, torch::kFloat);
  if (!v.empty()) std::copy(v.begin(), v.end(), t.data_ptr<float>());
  return t;
}



/// Root mean square: the scale a lgc_ps code travels with (the autoencoder sees unit-RMS
/// vectors, as it was trained on).
float rms(const torch::Tensor& v) {
  return v.numel() == 0 ? 0.0f : v.pow(2).mean().sqrt().item<float>();
}

torch::Tensor normalised(const torch::Tensor& v, float scale) {
  return scale > 0.0f ? v / scale : torch::zeros_like(v);
}

// A reconstruction further from `values` than zero is (an autoencoder amplifying vectors unlike
// those it was fitted on) would grow the error-feedback residual step after step: it counts at
// its best multiple in [0, 1] instead (least squares), never further from them than sending
// nothing. A reconstruction closer than zero counts as it is: that is what the update carried.
torch::Tensor bounded_reconstruction(const torch::Tensor& values, const torch::Tensor& reconstruction) {
  const double error = (values - reconstruction).pow(2).sum().item<double>();
  const double energy = values.pow(2).sum().item<double>();
  if (std::isfinite(error) && error <= energy) return reconstruction;
  const double reconstructed = reconstruction.pow(2).sum().item<double>();
  if (!(reconstructed > 0.0) || !std::isfinite(reconstructed)) return torch::zeros_like(values);
  const double alpha =
      std::clamp((reconstruction * values).sum().item<double>() / reconstructed, 0.0, 1.0);
  return reconstruction * alpha;
}

// Scales `update` down to at most `bound` in L2 norm (unchanged when within it).
torch::Tensor within_norm(const torch::Tensor& update, double bound) {
  const double norm = update.norm().item<double>();
  if (!std::isfinite(norm)) return torch::zeros_like(update);
  return norm > bound ? update * (bound / norm) : update;
}

}  // namespace

LgcCodec::LgcCodec(const Options& options, int rank, int workers, std::int64_t numel)
    : MultiRoundCodec(CodecTraits{options.variant == Variant::kRing ? "lgc_ring" : "lgc_ps"}),
      options_(options),
      rank_(rank),
      workers_(workers),
      numel_(numel) {
  if (workers < 1) throw std::invalid_argument("lgc: workers must be >= 1");
  if (rank < -1 || rank >= workers) throw std::invalid_argument("lgc: rank out of range");
  if (!(options.ratio > 0.0 && options.ratio <= 1.0)) {
    throw std::invalid_argument("lgc: ratio must be in (0, 1], got " + std::to_string(options.ratio));
  }
  if (options.warmup_steps < 0 || options.phase1_steps < 0 || options.ae_train_iters < 0 ||
      options.ae_finetune_every < 0 || options.ae_finetune_iters < 0) {
    throw std::invalid_argument("lgc: step counts must be >= 0");
  }
  if (numel < 0 || static_cast<std::uint64_t>(numel) > kMaxAddressable) {
    throw std::invalid_argument("lgc: gradient length out of range");
  }
  if (numel > 0) k_ = k_for(numel);
}

LgcCodec::~LgcCodec() = default;

bool LgcCodec::weights_step(std::int64_t step) const {
  const std::int64_t start = options_.warmup_steps + options_.phase1_steps;
  if (step < start) return false;
  if (step == start) return true;
  return options_.ae_finetune_every > 0 && (step - start) % options_.ae_finetune_every == 0;
}

std::int64_t LgcCodec::k_for(std::int64_t n) const {
  if (n <= 0) return 0;
  const std::int64_t k = count_from_ratio(options_.ratio, n, CountRounding::kNearest);
  return std::clamp<std::int64_t>(k, 1, n);
}

void LgcCodec::ensure_length(std::int64_t n, const char* who) {
  if (static_cast<std::uint64_t>(n) > kMaxAddressable) {
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(n) +
                                " elements do not fit u32 indices");
  }
  if (numel_ == 0) {
    numel_ = n;
    k_ = k_for(n);
  } else if (n != numel_) {
    throw std::invalid_argument(std::string(who) + ": gradient of " + std::to_string(n) +
                                " elements, this codec serves " + std::to_string(numel_));
  }
}

std::unique_ptr<LgcAutoencoder> LgcCodec::make_autoencoder() const {
  LgcAutoencoderConfig c;
  c.side_information = options_.variant == Variant::kParameterServer;
  c.layers = options_.downsample_layers;
  c.hidden_channels = options_.hidden_channels;
  c.code_channels = options_.code_channels;
  c.input_length = std::max<std::int64_t>(k_, 1);
  return std::make_unique<LgcAutoencoder>(c, options_.seed);
}

// --- Payloads -------------------------------------------------------------------------------

std::size_t LgcCodec::indices_payload_size(const std::vector<std::uint32_t>& indices,
                                           bool with_values) {
  const std::size_t k = indices.size();
  const IndexCoding coding = choose_index_coding(indices.data(), k);
  return kPayloadHeaderSize + 1 + 4 + 4 + 1 + 4 + index_section_size(coding, indices.data(), k) +
         (with_values ? 4 * k : 0);
}

Bytes LgcCodec::indices_payload(int leader, const std::vector<std::uint32_t>& indices,
                                const float* values) const {
  const std::size_t k = indices.size();
  const IndexCoding coding = choose_index_coding(indices.data(), k);
  const std::size_t section = index_section_size(coding, indices.data(), k);
  ByteWriter w(indices_payload_size(indices, values != nullptr));
  write_header(w, CodecId::kLgc, kFormatVersion, static_cast<std::uint64_t>(numel_));
  w.u8(static_cast<std::uint8_t>(values != nullptr ? Kind::kIndicesValues : Kind::kIndices));
  w.u32(static_cast<std::uint32_t>(leader));
  w.u32(static_cast<std::uint32_t>(k));
  w.u8(static_cast<std::uint8_t>(coding));
  w.u32(static_cast<std::uint32_t>(section));
  write_index_section(w, coding, indices.data(), k);
  if (values != nullptr) w.f32_array(values, k);
  return w.take();
}

Bytes LgcCodec::weights_payload() const {
  const std::vector<float> weights = ae_->weights();
  ByteWriter w(weights_payload_size(static_cast<std::int64_t>(weights.size())));
  write_header(w, CodecId::kLgc, kFormatVersion, static_cast<std::uint64_t>(numel_));
  w.u8(static_cast<std::uint8_t>(Kind::kWeights));
  w.u8(options_.variant == Variant::kRing ? kVariantRing : kVariantPs);
  w.u8(static_cast<std::uint8_t>(options_.downsample_layers));
  w.u8(static_cast<std::uint8_t>(options_.hidden_channels));
  w.u8(static_cast<std::uint8_t>(options_.code_channels));
  w.u32(static_cast<std::uint32_t>(k_));
  w.u32(static_cast<std::uint32_t>(weights.size()));
  w.f32_array(weights.data(), weights.size());
  return w.take();
}

void LgcCodec::load_weights(ByteSpan payload, const char* what) {
  ByteReader r(payload, what);
  std::uint64_t n = 0;
  const std::uint64_t limit = numel_ > 0 ? static_cast<std::uint64_t>(numel_) : kMaxAddressable;
  const std::uint8_t kind = read_prefix(r, name(), limit, n);
  if (kind != static_cast<std::uint8_t>(Kind::kWeights)) {
    r.fail(std::string("expected the autoencoder's weights, got ") + kind_name(kind));
  }
  if (numel_ > 0 && n != static_cast<std::uint64_t>(numel_)) {
    r.fail("element count " + std::to_string(n) + " does not match the gradient's " +
           std::to_string(numel_));
  }
  const std::uint8_t variant = r.u8("variant");
  const std::uint8_t layers = r.u8("layers");
  const std::uint8_t hidden = r.u8("hidden channels");
  const std::uint8_t code = r.u8("code channels");
  const std::uint8_t own_variant = options_.variant == Variant::kRing ? kVariantRing : kVariantPs;
  if (variant != own_variant || layers != options_.downsample_layers ||
      hidden != options_.hidden_channels || code != options_.code_channels) {
    r.fail("autoencoder shape (variant " + std::to_string(variant) + ", layers " +
           std::to_string(layers) + ", hidden " + std::to_string(hidden) + ", code " +
           std::to_string(code) + ") differs from this codec's");
  }
  const std::uint64_t k = r.u32("k");
  if (numel_ == 0) ensure_length(static_cast<std::int64_t>(n), what);
  if (k != static_cast<std::uint64_t>(k_)) {
    r.fail("k = " + std::to_string(k) + " but this codec keeps " + std::to_string(k_));
  }
  std::unique_ptr<LgcAutoencoder> model = make_autoencoder();
  const std::uint64_t count = r.u32("weight count");
  if (count != static_cast<std::uint64_t>(model->parameter_count())) {
    r.fail(std::to_string(count) + " weights for a model of " +
           std::to_string(model->parameter_count()));
  }
  const std::uint8_t* p = r.take(static_cast<std::size_t>(count), 4, "weights");
  r.expect_end();
  std::vector<float> weights(static_cast<std::size_t>(count));
  for (std::size_t j = 0; j < weights.size(); ++j) {
    weights[j] = load_f32_le(p + 4 * j);
    if (!std::isfinite(weights[j])) r.fail("weight " + std::to_string(j) + " is not finite");
  }
  model->set_weights(weights.data(), weights.size());
  ae_ = std::move(model);
}

void LgcCodec::take_indices(ByteSpan payload, bool expect_values, const char* what) {
  const std::uint64_t limit = numel_ > 0 ? static_cast<std::uint64_t>(numel_) : kMaxAddressable;
  ParsedIndices p = parse_indices(payload, name(), limit, workers_, numel_, numel_ > 0 ? k_ : -1,
                                  expect_values ? 1 : 0, what);
  if (numel_ == 0) ensure_length(static_cast<std::int64_t>(p.n), what);
  if (p.indices.size() != static_cast<std::size_t>(k_)) {
    throw DecodeError(std::string(what) + ": k = " + std::to_string(p.indices.size()) +
                      " but this codec keeps " + std::to_string(k_));
  }
  leader_ = static_cast<int>(p.leader);
  indices_ = std::move(p.indices);
  torch::Tensor idx = torch::empty({static_cast<std::int64_t>(indices_.size())}, torch::kLong);
  std::int64_t* d = idx.data_ptr<std::int64_t>();
  for (std::size_t j = 0; j < indices_.size(); ++j) d[j] = indices_[j];
  index_tensor_ = idx;
  leader_values_ = expect_values ? to_tensor(p.values) : torch::Tensor();
}

torch::Tensor LgcCodec::scatter(const torch::Tensor& values_k) const {
  torch::Tensor out = torch::zeros({numel_}, torch::kFloat);
  out.index_copy_(0, index_tensor_, values_k.to(torch::kFloat).reshape({-1}));
  return out;
}

// --- Single-worker form ---------------------------------------------------------------------

Bytes LgcCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, name() + " encode");
  ensure_length(grad.numel(), "lgc encode");
  torch::Tensor acc = grad;
  if (options_.error_feedback) {
    ensure_state(residual_, numel_, name() + " encode");
    acc = grad + residual_;
  }
  acc = acc.contiguous();
  const std::vector<std::uint32_t> indices =
      TopKCodec::select_largest(acc.data_ptr<float>(), numel_, k_);
  std::vector<float> values(indices.size());
  const float* a = acc.data_ptr<float>();
  for (std::size_t j = 0; j < indices.size(); ++j) values[j] = a[indices[j]];
  const Bytes payload = indices_payload(std::max(rank_, 0), indices, values.data());
  if (options_.error_feedback) {
    torch::Tensor residual = acc.clone();
    float* r = residual.data_ptr<float>();
    for (const std::uint32_t i : indices) r[i] = 0.0f;
    residual_ = residual;
  }
  set_last_density(numel_ > 0 ? static_cast<double>(k_) / static_cast<double>(numel_) : 1.0);
  return payload;
}

torch::Tensor LgcCodec::decode(ByteSpan payload) const {
  const std::uint64_t limit = numel_ > 0 ? static_cast<std::uint64_t>(numel_) : kMaxAddressable;
  // The single-worker form is self-describing: any k <= n decodes (a decoder built with
  // another ratio, as `gradwire codec decode` without --param, reads it as topk's would).
  const ParsedIndices p = parse_indices(payload, name(), limit, workers_, numel_, -1, 1,
                                        "lgc payload");
  torch::Tensor out = torch::zeros({static_cast<std::int64_t>(p.n)}, torch::kFloat);
  float* d = out.data_ptr<float>();
  for (std::size_t j = 0; j < p.indices.size(); ++j) d[p.indices[j]] = p.values[j];
  return out;
}

// --- The exchange ---------------------------------------------------------------------------

Round LgcCodec::begin_exchange(const at::Tensor& grad) {
  if (rank_ < 0) throw std::logic_error(name() + ": the server's instance takes no part in rounds");
  check_gradient(grad, name() + " begin_exchange");
  ensure_length(grad.numel(), "lgc begin_exchange");
  if (options_.error_feedback) {
    ensure_state(residual_, numel_, name() + " begin_exchange");
    acc_ = grad + residual_;
  } else {
    acc_ = grad.clone();  // the caller may reuse its buffer while rounds are in flight
  }
  result_ = torch::Tensor();
  stages_.clear();
  stage_ = 0;
  leader_ = static_cast<int>(step_ % workers_);
  const std::int64_t phase2_start = options_.warmup_steps + options_.phase1_steps;
  if (step_ < options_.warmup_steps) {
    stages_ = {Stage::kDense};
    set_last_density(1.0);
  } else {
    // The weights travel on the first phase-2 step and after every fine-tune; a codec
    // restored into phase 2 without them (state saved before training) fetches them again
    // rather than failing.
    if (step_ >= phase2_start && (!ae_ || weights_step(step_))) stages_.push_back(Stage::kWeights);
    stages_.push_back(Stage::kIndices);
    stages_.push_back(step_ >= phase2_start ? Stage::kCodes : Stage::kValues);
    set_last_density(static_cast<double>(k_) / static_cast<double>(numel_));
  }
  return next_round();
}

void LgcCodec::train_autoencoder() {
  // The first training starts from the seeded initialisation; later ones fine-tune the model
  // every worker holds, which is what the weights that travelled last describe.
  const bool fine_tune = ae_ != nullptr;
  if (!fine_tune) ae_ = make_autoencoder();
  const int iterations = fine_tune ? options_.ae_finetune_iters : options_.ae_train_iters;
  training_losses_.clear();
  training_rows_ = static_cast<std::int64_t>(samples_.size());
  training_flops_ = 0;
  if (!samples_.empty() && iterations > 0) {
    const torch::Tensor x = torch::stack(samples_);
    const torch::Tensor s = side_.empty() ? torch::Tensor() : torch::stack(side_);
    training_losses_ = ae_->train(x, s, iterations, options_.ae_lr);
    training_flops_ = ae_->training_flops(training_rows_, iterations);
  }
  ++trainings_;
  samples_.clear();
  side_.clear();
}

void LgcCodec::collect_sample(const at::Tensor& mean) {
  // A worker whose gradient is no longer finite has diverged; its vectors would make the
  // autoencoder's weights non-finite too.
  if (!torch::isfinite(own_values_).all().item<bool>()) return;
  // lgc_ring decodes the workers' mean code, so the mean is a sample too (phase 1, where it
  // is exact); lgc_ps decodes one worker's values given the leader's.
  if (options_.variant == Variant::kRing) {
    samples_.push_back(own_values_.clone());
    if (mean.defined() && workers_ > 1) samples_.push_back(mean.clone());
  } else if (leader_ != 0 || workers_ == 1) {
    samples_.push_back(own_values_.clone());
    side_.push_back(leader_values_.clone());
  }
}

Round LgcCodec::next_round() {
  const bool ring = options_.variant == Variant::kRing;
  Round round;
  switch (stages_[stage_]) {
    case Stage::kDense:
      round.op = RoundOp::kSum;
      round.values = acc_;
      break;
    case Stage::kWeights:
      // Rank 0 trains on what it collected in phase 1, then ships the whole model: every
      // worker needs the encoder, and the decoder to reconstruct (lgc_ring's mean, and each
      // worker's own contribution for error feedback).
      round.op = RoundOp::kBroadcast;
      round.root = 0;
      if (rank_ == 0) {
        train_autoencoder();
        round.payload = weights_payload();
      }
      break;
    case Stage::kIndices:
      round.op = RoundOp::kBroadcast;
      round.root = leader_;
      if (rank_ == leader_) {
        const std::vector<std::uint32_t> indices =
            TopKCodec::select_largest(acc_.data_ptr<float>(), numel_, k_);
        std::vector<float> values;
        if (!ring) {
          const float* a = acc_.data_ptr<float>();
          values.resize(indices.size());
          for (std::size_t j = 0; j < indices.size(); ++j) values[j] = a[indices[j]];
        }
        round.payload = indices_payload(leader_, indices, ring ? nullptr : values.data());
      }
      break;
    case Stage::kValues:
      if (ring) {
        round.op = RoundOp::kSum;
        round.values = own_values_;
      } else {
        round.op = RoundOp::kReduce;
        ByteWriter w(rank_ == leader_ ? leader_payload_size() : values_payload_size(k_));
        write_header(w, CodecId::kLgc, kFormatVersion, static_cast<std::uint64_t>(numel_));
        w.u8(static_cast<std::uint8_t>(rank_ == leader_ ? Kind::kLeader : Kind::kValues));
        w.u32(static_cast<std::uint32_t>(k_));
        if (rank_ != leader_) write_f32_tensor(w, own_values_);
        round.payload = w.take();
      }
      break;
    case Stage::kCodes:
      if (ring) {
        // The code, then this worker's values' norm: the sum's last entry bounds the norm of
        // the mean (triangle inequality), which the decoded mean must not exceed.
        round.op = RoundOp::kSum;
        round.values = torch::cat({ae_->encode(own_values_).reshape({-1}),
                                   own_values_.norm().reshape({1})})
                           .contiguous();
      } else {
        round.op = RoundOp::kReduce;
        const std::int64_t m = ae_->code_length();
        ByteWriter w(rank_ == leader_ ? leader_payload_size() : code_payload_size(m));
        write_header(w, CodecId::kLgc, kFormatVersion, static_cast<std::uint64_t>(numel_));
        w.u8(static_cast<std::uint8_t>(rank_ == leader_ ? Kind::kLeader : Kind::kCode));
        w.u32(static_cast<std::uint32_t>(k_));
        if (rank_ != leader_) {
          const float scale = rms(own_values_);
          w.f32(scale);
          w.u32(static_cast<std::uint32_t>(m));
          write_f32_tensor(w, ae_->encode(normalised(own_values_, scale)));
        }
        round.payload = w.take();
      }
      break;
  }
  return round;
}

std::optional<Round> LgcCodec::continue_exchange(int round, RoundOutcome&& outcome) {
  if (stages_.empty() || round != static_cast<int>(stage_) || stage_ >= stages_.size()) {
    throw std::logic_error(name() + ": outcome of round " + std::to_string(round) +
                           " does not match the exchange in progress");
  }
  const bool ring = options_.variant == Variant::kRing;
  const auto expect_sum = [&](std::int64_t length) {
    if (!outcome.sum.defined() || outcome.sum.numel() != length) {
      throw std::invalid_argument(name() + ": round " + std::to_string(round) + " delivered " +
                                  (outcome.sum.defined() ? std::to_string(outcome.sum.numel())
                                                         : std::string("no")) +
                                  " values, expected " + std::to_string(length));
    }
    return outcome.sum.to(torch::kFloat).reshape({-1});
  };
  const double n = static_cast<double>(workers_);
  switch (stages_[stage_]) {
    case Stage::kDense:
      finish_step(expect_sum(numel_) / n, acc_);
      break;
    case Stage::kWeights:
      // Everyone, rank 0 included, loads the model from the bytes that travelled.
      load_weights(outcome.broadcast, "lgc weights broadcast");
      break;
    case Stage::kIndices: {
      take_indices(outcome.broadcast, !ring, "lgc indices broadcast");
      if (leader_ != static_cast<int>(step_ % workers_)) {
        throw DecodeError("lgc indices broadcast: leader " + std::to_string(leader_) +
                          ", expected " + std::to_string(step_ % workers_));
      }
      own_values_ = acc_.index_select(0, index_tensor_);
      break;
    }
    case Stage::kValues: {
      const torch::Tensor mean = expect_sum(k_) / n;
      // Training data for phase 2 (the paper trains on the gradients of the first stages).
      if (rank_ == 0) collect_sample(mean);
      finish_step(scatter(mean), scatter(own_values_));
      break;
    }
    case Stage::kCodes: {
      // Fine-tuning data: in phase 2 rank 0 knows its own values (and, for lgc_ps, the
      // leader's) exactly; the mean only through the autoencoder, so it is not used.
      if (rank_ == 0 && options_.ae_finetune_every > 0) collect_sample(torch::Tensor());
      if (ring) {
        const std::int64_t m = ae_->code_length();
        const torch::Tensor sum = expect_sum(m + 1);
        const torch::Tensor mean_code = sum.slice(0, 0, m) / n;
        const double mean_norm_bound = sum[m].item<double>() / n;
        const torch::Tensor own =
            bounded_reconstruction(own_values_, ae_->decode(ae_->encode(own_values_)));
        finish_step(scatter(within_norm(ae_->decode(mean_code), mean_norm_bound)), scatter(own));
      } else {
        const torch::Tensor mean = expect_sum(k_) / n;
        torch::Tensor own = own_values_;
        if (rank_ != leader_) {
          const float scale = rms(own_values_);
          own = bounded_reconstruction(
              own_values_, ae_->decode(ae_->encode(normalised(own_values_, scale)),
                                       normalised(leader_values_, rms(leader_values_))) *
                               scale);
        }
        finish_step(scatter(mean), scatter(own));
      }
      break;
    }
  }
  ++stage_;
  if (stage_ < stages_.size()) return next_round();
  return std::nullopt;
}

void LgcCodec::finish_step(const at::Tensor& update, const at::Tensor& own_reconstruction) {
  if (options_.error_feedback) residual_ = acc_ - own_reconstruction;
  result_ = update;
  acc_ = torch::Tensor();
  ++step_;
}

at::Tensor LgcCodec::exchange_result() {
  if (!result_.defined()) throw std::logic_error(name() + ": no exchange has finished");
  return result_;
}

at::Tensor LgcCodec::reduce_round(int round, const std::vector<ByteSpan>& payloads) {
  if (options_.variant == Variant::kRing) return MultiRoundCodec::reduce_round(round, payloads);
  const char* what = "lgc reduce payload";
  if (static_cast<int>(payloads.size()) != workers_) {
    throw DecodeError(std::string(what) + ": " + std::to_string(payloads.size()) +
                      " payloads for " + std::to_string(workers_) + " workers");
  }
  if (indices_.size() != static_cast<std::size_t>(k_) || !leader_values_.defined() || k_ == 0) {
    throw DecodeError(std::string(what) + ": no side information (the leader's broadcast of "
                      "this step has not been seen)");
  }
  torch::Tensor sum = leader_values_.clone();
  std::vector<torch::Tensor> codes;
  std::vector<float> scales;
  int leaders = 0;
  for (std::size_t w = 0; w < payloads.size(); ++w) {
    ByteReader r(payloads[w], std::string(what) + " of rank " + std::to_string(w));
    std::uint64_t n = 0;
    const std::uint8_t kind = read_prefix(r, name(), static_cast<std::uint64_t>(numel_), n);
    if (n != static_cast<std::uint64_t>(numel_)) {
      r.fail("element count " + std::to_string(n) + " does not match the gradient's " +
             std::to_string(numel_));
    }
    const std::uint64_t k = r.u32("k");
    if (k != static_cast<std::uint64_t>(k_)) {
      r.fail("k = " + std::to_string(k) + " but the shared indices are " + std::to_string(k_));
    }
    switch (static_cast<Kind>(kind)) {
      case Kind::kLeader:
        if (static_cast<int>(w) != leader_) {
          r.fail("rank " + std::to_string(w) + " claims to lead; the leader is " +
                 std::to_string(leader_));
        }
        ++leaders;
        break;
      case Kind::kValues:
        sum += read_f32_tensor(r, k, "values");
        break;
      case Kind::kCode: {
        if (!ae_) r.fail("a latent code arrived before the autoencoder's weights");
        const float scale = r.f32("scale");
        if (!(scale >= 0.0f) || !std::isfinite(scale)) r.fail("scale is negative or not finite");
        const std::uint64_t m = r.u32("code length");
        if (m != static_cast<std::uint64_t>(ae_->code_length())) {
          r.fail("code of " + std::to_string(m) + " floats, the autoencoder's has " +
                 std::to_string(ae_->code_length()));
        }
        codes.push_back(read_f32_tensor(r, m, "code"));
        scales.push_back(scale);
        break;
      }
      default:
        r.fail(std::string("unexpected ") + kind_name(kind) + " payload in a reduce round");
    }
    r.expect_end();
  }
  if (leaders != 1) {
    throw DecodeError(std::string(what) + ": " + std::to_string(leaders) +
                      " leader payloads, expected exactly 1");
  }
  if (!codes.empty()) {
    // One batched decode; every code shares the leader's values as side information.
    const torch::Tensor side = normalised(leader_values_, rms(leader_values_));
    const torch::Tensor decoded = ae_->decode(torch::stack(codes), side);
    // A worker's values have norm scale * sqrt(k): its reconstruction may not exceed that.
    const double root_k = std::sqrt(static_cast<double>(k_));
    for (std::size_t w = 0; w < codes.size(); ++w) {
      sum += within_norm(decoded[static_cast<std::int64_t>(w)] * scales[w], scales[w] * root_k);
    }
  }
  return sum;
}

void LgcCodec::observe_broadcast(int /*round*/, ByteSpan payload) {
  ByteReader r(payload, "lgc broadcast");
  std::uint64_t n = 0;
  const std::uint8_t kind =
      read_prefix(r, name(), numel_ > 0 ? static_cast<std::uint64_t>(numel_) : kMaxAddressable, n);
  switch (static_cast<Kind>(kind)) {
    case Kind::kWeights:
      load_weights(payload, "lgc weights broadcast");
      return;
    case Kind::kIndices:
    case Kind::kIndicesValues:
      take_indices(payload, kind == static_cast<std::uint8_t>(Kind::kIndicesValues),
                   "lgc indices broadcast");
      return;
    default:
      r.fail(std::string("a ") + kind_name(kind) + " payload is not broadcast");
  }
}

// --- State ----------------------------------------------------------------------------------

Bytes LgcCodec::save_state() const {
  CodecState st(name());
  st.put_u64("step", static_cast<std::uint64_t>(step_));
  st.put_u64("numel", static_cast<std::uint64_t>(numel_));
  st.put_tensor("residual", residual_);
  if (ae_) st.put_bytes("weights", weights_payload());
  if (!samples_.empty()) st.put_tensor("samples", torch::stack(samples_));
  if (!side_.empty()) st.put_tensor("side", torch::stack(side_));
  return st.serialize();
}

void LgcCodec::load_state(ByteSpan state) {
  if (state.size == 0) {
    step_ = 0;
    residual_ = torch::Tensor();
    ae_.reset();
    samples_.clear();
    side_.clear();
    return;
  }
  const CodecState st = CodecState::parse(state, name());
  const std::int64_t step = st.counter("step");  // checked before anything is replaced
  const auto numel = static_cast<std::int64_t>(st.u64("numel"));
  if (numel < 0 || static_cast<std::uint64_t>(numel) > kMaxAddressable ||
      (numel_ > 0 && numel > 0 && numel != numel_)) {
    throw DecodeError(name() + " state: gradient length " + std::to_string(numel) +
                      " does not match " + std::to_string(numel_));
  }
  if (numel_ == 0 && numel > 0) ensure_length(numel, "lgc state");
  const torch::Tensor residual = st.tensor("residual");
  if (residual.defined() && residual.numel() != numel_) {
    throw DecodeError(name() + " state: residual of " + std::to_string(residual.numel()) +
                      " elements for a gradient of " + std::to_string(numel_));
  }
  const auto split = [&](const char* key) {
    std::vector<torch::Tensor> rows;
    const torch::Tensor flat = st.tensor(key);
    if (!flat.defined()) return rows;
    if (k_ == 0 || flat.numel() % k_ != 0) {
      throw DecodeError(name() + " state: " + key + " are not rows of k = " + std::to_string(k_));
    }
    for (const auto& row : flat.reshape({-1, k_}).unbind(0)) rows.push_back(row.clone());
    return rows;
  };
  std::vector<torch::Tensor> samples = split("samples");
  std::vector<torch::Tensor> side = split("side");
  const Bytes weights = st.bytes("weights");
  if (!weights.empty()) {
    load_weights(weights, "lgc state weights");
  } else {
    ae_.reset();
  }
  step_ = step;
  residual_ = residual;
  samples_ = std::move(samples);
  side_ = std::move(side);
}

CodecWork LgcCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double k = static_cast<double>(k_for(numel));
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode:
      return CodecWork::memory(12 * n + 4 * n + bytes) + CodecWork::compute(n) +
             CodecWork::selection(n, k) + CodecWork::gather(n, k) * 2;
    case CodecOp::kDecode: return CodecWork::memory(bytes + 4 * n) + CodecWork::gather(n, k);
    default: return MultiRoundCodec::work(op, numel, payload_bytes);
  }
}

CodecWork LgcCodec::round_work(int call, std::int64_t numel) const {
  const double n = static_cast<double>(numel);
  const double k = static_cast<double>(k_);
  const bool ring = options_.variant == Variant::kRing;
  const double encode = ae_ ? ae_->encode_flops() : 0.0;
  const double decode = ae_ ? ae_->decode_flops() : 0.0;
  const double params = ae_ ? static_cast<double>(ae_->parameter_count()) : 0.0;
  // Scatter of the mean (and of the own reconstruction) into dense vectors, residual update.
  const CodecWork finish = CodecWork::memory(8 * n + 12 * n) + CodecWork::compute(n);
  CodecWork w;
  if (call == 0) w += CodecWork::memory(12 * n) + CodecWork::compute(n);
  const auto index = static_cast<std::size_t>(call);
  if (call >= 1 && index - 1 < stages_.size()) {  // consume stage call - 1
    switch (stages_[index - 1]) {
      case Stage::kDense: w += CodecWork::memory(8 * n) + CodecWork::compute(n) + finish; break;
      case Stage::kWeights: w += CodecWork::memory(4 * params); break;
      case Stage::kIndices: w += CodecWork::gather(n, k); break;
      case Stage::kValues: w += CodecWork::compute(k) + finish; break;
      case Stage::kCodes:
        // ring: decode the mean code, and this worker's own reconstruction (encode + decode);
        // ps: a non-leader's own reconstruction (encode + decode, with the side information).
        if (ring) {
          w += CodecWork::compute(encode + 2 * decode);
        } else if (rank_ != leader_) {
          w += CodecWork::compute(encode + decode);
        }
        w += finish;
        break;
    }
  }
  if (index < stages_.size()) {  // produce stage call
    switch (stages_[index]) {
      case Stage::kDense: break;
      case Stage::kWeights:
        if (rank_ == 0) {
          // The training this call ran: the rows stacked, normalised and padded (three passes
          // over N x k floats), then the iterations; and the weights written out.
          const double rows = static_cast<double>(training_rows_);
          w += CodecWork::memory(3 * 4 * rows * k) + CodecWork::compute(training_flops_);
          w += CodecWork::memory(4 * params);
        }
        break;
      case Stage::kIndices:
        if (rank_ == leader_) w += CodecWork::selection(n, k) + CodecWork::memory(4 * n + 8 * k);
        break;
      case Stage::kValues: w += CodecWork::memory(4 * k); break;
      case Stage::kCodes:
        if (ring || rank_ != leader_) w += CodecWork::compute(encode + 2 * k);
        break;
    }
  }
  return w;
}

CodecWork LgcCodec::reduce_work(int /*round*/, std::int64_t numel, std::size_t payloads,
                                std::uint64_t payload_bytes) const {
  const double k = static_cast<double>(numel);
  const double count = static_cast<double>(payloads);
  CodecWork w = CodecWork::memory(static_cast<double>(payload_bytes) + 12 * k * count) +
                CodecWork::compute(k * count);
  // Phase 2: each code decoded with the leader's values as side information.
  if (ae_ && step_ >= options_.warmup_steps + options_.phase1_steps) {
    w += CodecWork::compute(ae_->decode_flops() * count);
  }
  return w;
}

}  // namespace gradwire
