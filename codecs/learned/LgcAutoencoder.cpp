#include "codecs/learned/LgcAutoencoder.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

namespace gradwire {

namespace {

// LeakyReLU's negative slope. Any slope keeps the decoder positively homogeneous (no biases);
// 0.2 is the common autoencoder choice and keeps negative gradient values (half of them) from
// being squashed, which a plain ReLU would do.
constexpr double kNegativeSlope = 0.2;
// Kernel 4, stride 2, padding 1 halves (Conv1d) or doubles (ConvTranspose1d) an even length
// exactly, so the code is exactly 2^layers shorter and the decoder returns the padded length.
constexpr int kKernel = 4;

torch::nn::Conv1d conv(int in, int out, int kernel, int stride, int padding) {
  return torch::nn::Conv1d(
      torch::nn::Conv1dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
}

torch::nn::ConvTranspose1d deconv(int in, int out) {
  return torch::nn::ConvTranspose1d(
      torch::nn::ConvTranspose1dOptions(in, out, kKernel).stride(2).padding(1).bias(false));
}

/// Rows scaled to unit RMS; all-zero rows stay zero (the clamp only guards the division).
torch::Tensor normalise_rows(const torch::Tensor& x) {
  const torch::Tensor rms = x.pow(2).mean({1}, /*keepdim=*/true).sqrt();
  return x / rms.clamp_min(1e-30);
}

}  // namespace

struct LgcAutoencoder::Net : torch::nn::Module {
  torch::nn::Sequential encoder{nullptr};
  torch::nn::Sequential decoder{nullptr};
  torch::nn::Sequential head{nullptr};

  explicit Net(const LgcAutoencoderConfig& c) {
    const int h = c.hidden_channels;
    torch::nn::Sequential enc;
    for (int i = 0; i < c.layers; ++i) {
      enc->push_back(conv(i == 0 ? 1 : h, i == c.layers - 1 ? c.code_channels : h, kKernel, 2, 1));
    }
    torch::nn::Sequential dec;
    for (int i = 0; i < c.layers; ++i) {
      dec->push_back(deconv(i == 0 ? c.code_channels : h, h));
      dec->push_back(torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(kNegativeSlope)));
    }
    torch::nn::Sequential hd;
    // Pointwise head: the transposed convolutions already mix neighbours; a 1x1 mixing of
    // their channels with the side information at the same position is what the reference
    // parameter-server decoder does, and costs a third of a width-3 kernel at full length.
    hd->push_back(conv(h + (c.side_information ? 1 : 0), h, 1, 1, 0));
    hd->push_back(torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(kNegativeSlope)));
    hd->push_back(conv(h, 1, 1, 1, 0));
    encoder = register_module("encoder", enc);
    decoder = register_module("decoder", dec);
    head = register_module("head", hd);
  }
};

LgcAutoencoder::LgcAutoencoder(const LgcAutoencoderConfig& config, std::uint64_t seed)
    : config_(config), seed_(seed) {
  if (config.layers < 1 || config.layers > 8) {
    throw std::invalid_argument("lgc autoencoder: layers must be in [1, 8], got " +
                                std::to_string(config.layers));
  }
  if (config.hidden_channels < 1 || config.hidden_channels > 256 || config.code_channels < 1 ||
      config.code_channels > 256) {
    throw std::invalid_argument("lgc autoencoder: channels must be in [1, 256]");
  }
  if (config.input_length < 1) {
    throw std::invalid_argument("lgc autoencoder: input length must be >= 1");
  }
  {
    // LibTorch's layer constructors draw their default initialisation from the global
    // generator, which also seeds the training run's model and data order: put its state
    // back afterwards so that building the autoencoder changes nothing else.
    at::Generator global = at::detail::getDefaultCPUGenerator();
    at::Tensor saved;
    {
      std::lock_guard<std::mutex> lock(global.mutex());
      saved = global.get_state();
    }
    net_ = std::make_unique<Net>(config);
    std::lock_guard<std::mutex> lock(global.mutex());
    global.set_state(saved);
  }
  // Deterministic initialisation from a private generator: uniform with variance 1/fan_in
  // (LeCun), so every worker that builds the model from the same seed gets the same weights
  // and the global LibTorch generator the training run depends on is left untouched.
  at::Generator gen = at::detail::createCPUGenerator(seed);
  torch::NoGradGuard no_grad;
  for (auto& item : net_->named_parameters()) {
    // Conv1d weight [out, in, k]: fan_in = in * k. ConvTranspose1d weight [in, out, k] with
    // stride 2: each output element sees in * k / 2 inputs.
    torch::Tensor& p = item.value();
    const bool transposed = item.key().rfind("decoder.", 0) == 0;
    const double fan_in = transposed ? static_cast<double>(p.size(0) * p.size(2)) / 2.0
                                     : static_cast<double>(p.size(1) * p.size(2));
    const double bound = std::sqrt(3.0 / std::max(1.0, fan_in));
    p.uniform_(-bound, bound, gen);
  }
}

LgcAutoencoder::~LgcAutoencoder() = default;

std::int64_t LgcAutoencoder::padded_length() const {
  const std::int64_t block = std::int64_t{1} << config_.layers;
  return (config_.input_length + block - 1) / block * block;
}

std::int64_t LgcAutoencoder::code_length() const {
  return config_.code_channels * (padded_length() >> config_.layers);
}

std::int64_t LgcAutoencoder::parameter_count() const {
  std::int64_t total = 0;
  for (const auto& p : net_->parameters()) total += p.numel();
  return total;
}

double LgcAutoencoder::encode_flops() const {
  const double h = config_.hidden_channels;
  const double c = config_.code_channels;
  double flops = 0;
  double length = static_cast<double>(padded_length());
  for (int i = 0; i < config_.layers; ++i) {
    length /= 2;  // a stride-2 convolution's output positions
    const double in = i == 0 ? 1.0 : h;
    const double out = i == config_.layers - 1 ? c : h;
    flops += 2.0 * in * out * kKernel * length;
  }
  return flops;
}

double LgcAutoencoder::decode_flops() const {
  const double h = config_.hidden_channels;
  const double c = config_.code_channels;
  const double padded = static_cast<double>(padded_length());
  double flops = 0;
  double length = padded / static_cast<double>(std::int64_t{1} << config_.layers);
  for (int i = 0; i < config_.layers; ++i) {
    const double in = i == 0 ? c : h;
    flops += 2.0 * in * h * kKernel * length;  // each input position scatters its kernel
    length *= 2;
    flops += h * length;  // LeakyReLU
  }
  const double head_in = h + (config_.side_information ? 1.0 : 0.0);
  flops += 2.0 * head_in * h * padded + h * padded + 2.0 * h * padded;
  return flops;
}

double LgcAutoencoder::training_flops(std::int64_t rows, int iterations) const {
  if (rows <= 0 || iterations <= 0) return 0.0;
  const double batch = static_cast<double>(std::min(rows, kBatch));
  const double per_row = 3.0 * (encode_flops() + decode_flops());
  return static_cast<double>(iterations) *
         (batch * per_row + 12.0 * static_cast<double>(parameter_count()));
}

namespace {

/// [k] or [N, k] -> [N, 1, K] zero-padded; `batched` says which form came in.
torch::Tensor to_batch(const torch::Tensor& x, std::int64_t k, std::int64_t padded,
                       const char* what, bool& batched) {
  if (!x.defined() || (x.dim() != 1 && x.dim() != 2) || x.size(-1) != k) {
    throw std::invalid_argument(std::string("lgc autoencoder: ") + what + " must be [" +
                                std::to_string(k) + "] or [N, " + std::to_string(k) + "]");
  }
  batched = x.dim() == 2;
  torch::Tensor b = (batched ? x : x.unsqueeze(0)).to(torch::kFloat);
  return torch::constant_pad_nd(b, {0, padded - k}).unsqueeze(1);
}

}  // namespace

at::Tensor LgcAutoencoder::encode(const at::Tensor& values) const {
  torch::NoGradGuard no_grad;
  bool batched = false;
  const torch::Tensor x = to_batch(values, config_.input_length, padded_length(), "values", batched);
  torch::Tensor code = net_->encoder->forward(x).reshape({x.size(0), code_length()});
  return batched ? code : code.squeeze(0);
}

at::Tensor LgcAutoencoder::decode(const at::Tensor& codes, const at::Tensor& side) const {
  torch::NoGradGuard no_grad;
  const std::int64_t m = code_length();
  if (!codes.defined() || (codes.dim() != 1 && codes.dim() != 2) || codes.size(-1) != m) {
    throw std::invalid_argument("lgc autoencoder: codes must be [" + std::to_string(m) +
                                "] or [N, " + std::to_string(m) + "]");
  }
  const bool batched = codes.dim() == 2;
  const torch::Tensor c = (batched ? codes : codes.unsqueeze(0)).to(torch::kFloat);
  torch::Tensor h = net_->decoder->forward(
      c.reshape({c.size(0), config_.code_channels, padded_length() >> config_.layers}));
  if (config_.side_information) {
    bool side_batched = false;
    torch::Tensor s = to_batch(side, config_.input_length, padded_length(), "side", side_batched);
    if (s.size(0) != h.size(0)) s = s.expand({h.size(0), 1, padded_length()});
    h = torch::cat({h, s}, 1);
  }
  torch::Tensor out = net_->head->forward(h).squeeze(1).narrow(1, 0, config_.input_length);
  return batched ? out : out.squeeze(0);
}

std::vector<double> LgcAutoencoder::train(const at::Tensor& samples, const at::Tensor& side,
                                          int iterations, double learning_rate) {
  std::vector<double> losses;
  if (iterations <= 0 || !samples.defined() || samples.size(0) == 0) return losses;
  const std::int64_t k = config_.input_length;
  const std::int64_t padded = padded_length();
  bool batched = true;
  const torch::Tensor x = to_batch(normalise_rows(samples.to(torch::kFloat)), k, padded, "samples", batched);
  torch::Tensor s;
  if (config_.side_information) {
    if (!side.defined() || side.dim() != 2 || side.size(0) != samples.size(0)) {
      throw std::invalid_argument("lgc autoencoder: side information must match the samples");
    }
    s = to_batch(normalise_rows(side.to(torch::kFloat)), k, padded, "side", batched);
  }
  const std::int64_t rows = x.size(0);
  // One shuffle from the model's seed; batches are consecutive windows of it, wrapping round.
  at::Generator gen = at::detail::createCPUGenerator(seed_ ^ 0x5eedull);
  const torch::Tensor order = torch::randperm(rows, gen, torch::TensorOptions().dtype(torch::kLong));
  const std::int64_t batch = std::min(rows, kBatch);
  torch::optim::Adam optimizer(net_->parameters(), torch::optim::AdamOptions(learning_rate));
  losses.reserve(static_cast<std::size_t>(iterations));
  for (int it = 0; it < iterations; ++it) {
    torch::Tensor xb = x;
    torch::Tensor sb = s;
    if (batch < rows) {
      const torch::Tensor pick =
          order.index_select(0, (torch::arange(batch, torch::kLong) + it * batch) % rows);
      xb = x.index_select(0, pick);
      if (s.defined()) sb = s.index_select(0, pick);
    }
    optimizer.zero_grad();
    torch::Tensor h = net_->decoder->forward(net_->encoder->forward(xb));
    if (config_.side_information) h = torch::cat({h, sb}, 1);
    const torch::Tensor out = net_->head->forward(h).narrow(2, 0, k);
    torch::Tensor loss = torch::mse_loss(out, xb.narrow(2, 0, k));
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

double LgcAutoencoder::relative_error(const at::Tensor& samples, const at::Tensor& side) const {
  torch::NoGradGuard no_grad;
  const torch::Tensor x = normalise_rows(samples.to(torch::kFloat));
  torch::Tensor s;
  if (config_.side_information) s = normalise_rows(side.to(torch::kFloat));
  const torch::Tensor y = decode(encode(x), s);
  const double energy = x.pow(2).sum().item<double>();
  return energy > 0 ? (y - x).pow(2).sum().item<double>() / energy : 0.0;
}

std::vector<float> LgcAutoencoder::weights() const {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(parameter_count()));
  for (const auto& p : net_->parameters()) {
    const torch::Tensor c = p.detach().contiguous();
    const float* d = c.data_ptr<float>();
    out.insert(out.end(), d, d + c.numel());
  }
  return out;
}

void LgcAutoencoder::set_weights(const float* data, std::size_t count) {
  if (count != static_cast<std::size_t>(parameter_count())) {
    throw std::invalid_argument("lgc autoencoder: " + std::to_string(count) + " weights for a " +
                                "model of " + std::to_string(parameter_count()));
  }
  torch::NoGradGuard no_grad;
  std::size_t at = 0;
  for (auto& p : net_->parameters()) {
    const auto n = static_cast<std::size_t>(p.numel());
    p.copy_(torch::from_blob(const_cast<float*>(data + at), p.sizes(), torch::kFloat));
    at += n;
  }
}

}  // namespace gradwire
