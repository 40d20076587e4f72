#include "codecs/lowrank/PowerSgdCodec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <ATen/ATen.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/sparsify/SparseRandom.h"
#include "codecs/wire/TensorWire.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

constexpr const char* kWhat = "powersgd payload";

/// Gram-Schmidt on the columns of a (rows x r) matrix, in place, as PyTorch's
/// _orthogonalize_gram_schmidt: each column divided by its norm + epsilon. With epsilon 0 a
/// column of norm 0 becomes zeros (PyTorch's recovery for that case) rather than 0 / 0.
void orthogonalise(at::Tensor& m, double epsilon) {
  const std::int64_t cols = m.size(1);
  for (std::int64_t i = 0; i < cols; ++i) {
    at::Tensor col = m.narrow(1, i, 1);
    const float norm = col.norm().item<float>();
    if (epsilon == 0.0 && norm == 0.0f) {
      col.zero_();
    } else {
      col.div_(norm + static_cast<float>(epsilon));
    }
    if (i + 1 < cols) {
      at::Tensor rest = m.narrow(1, i + 1, cols - i - 1);
      rest.sub_((col * rest).sum(0, /*keepdim=*/true) * col);
    }
  }
}

/// Standard normal (cols x r) from a seed, by Box-Muller over SplitMix64: the same numbers on
/// every worker and platform, which warm start needs (all workers must start from one Q).
at::Tensor seeded_normal(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  at::Tensor out = at::empty({rows, cols}, at::kFloat);
  float* p = out.data_ptr<float>();
  SplitMix64 g(seed);
  const std::int64_t n = rows * cols;
  for (std::int64_t i = 0; i < n; i += 2) {
    const double u1 = (static_cast<double>(g.next() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(g.next() >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    p[i] = static_cast<float>(r * std::cos(2.0 * M_PI * u2));
    if (i + 1 < n) p[i + 1] = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
  }
  return out;
}

}  // namespace

PowerSgdCodec::PowerSgdCodec(Options options, const CodecContext& ctx)
    // A gradient on an accelerator keeps M, P, Q, the error and the update there; the rounds'
    // values (P and Q factors, dense tensors) are handed to the network from host memory and
    // their sums copied back. Matrix products on another device sum in another order, so the
    // factors agree with the host's to float rounding, not bit for bit.
    : MultiRoundCodec(
          CodecTraits{"powersgd", Aggregation::kDecodeThenSum, /*encodes_on_device=*/true}),
      options_(options),
      workers_(std::max(1, ctx.workers)),
      seed_(ctx.seed),
      numel_(ctx.numel) {
  if (options_.rank < 1) throw std::invalid_argument("powersgd: rank must be >= 1");
  const double epsilon = options_.orthogonalization_epsilon;
  if (!(epsilon >= 0.0 && std::isfinite(epsilon))) {
    throw std::invalid_argument("powersgd: orthogonalization_epsilon must be finite and >= 0");
  }
  std::vector<LayerSlice> layers = ctx.layers;
  if (layers.empty()) layers.push_back(LayerSlice{"gradient", 0, {ctx.numel}});
  std::int64_t expected = 0;
  for (const LayerSlice& layer : layers) {
    if (layer.offset != expected) {
      throw std::invalid_argument("powersgd: layer '" + layer.name + "' does not start where the "
                                  "previous one ends");
    }
    const std::int64_t n = layer.numel();
    expected += n;
    if (layer.shape.size() >= 2 && n > 0) {
      Matrix m;
      m.offset = layer.offset;
      m.rows = layer.shape[0];
      m.cols = n / m.rows;
      m.rank = std::min<std::int64_t>({options_.rank, m.rows, m.cols});
      // PyTorch's _should_compress: worth it only when (rows + cols) r * rate < rows * cols.
      if (static_cast<double>(m.rows + m.cols) * m.rank * options_.min_compression <
          static_cast<double>(m.rows * m.cols)) {
        matrices_.push_back(m);
        continue;
      }
    }
    if (n > 0) dense_.push_back(Span{layer.offset, n});
  }
  if (numel_ <= 0) numel_ = expected;
  if (expected != numel_) {
    throw std::invalid_argument("powersgd: layers cover " + std::to_string(expected) +
                                " elements, the gradient has " + std::to_string(numel_));
  }
  q_.resize(matrices_.size());
  p_.resize(matrices_.size());
}

PowerSgdCodec::~PowerSgdCodec() = default;

std::int64_t PowerSgdCodec::compressed_floats() const {
  std::int64_t floats = 0;
  for (const Matrix& m : matrices_) floats += (m.rows + m.cols) * m.rank;
  for (const Span& d : dense_) floats += d.numel;
  return floats;
}

void PowerSgdCodec::ensure_q() {
  for (std::size_t i = 0; i < matrices_.size(); ++i) {
    if (options_.warm_start && q_[i].defined()) continue;
    // Without warm start every step draws a fresh Q (seeded by the step, shared by workers).
    const std::uint64_t seed =
        mix_seed(seed_, 0x50535144ULL, i, options_.warm_start ? 0 : static_cast<std::uint64_t>(step_) + 1);
    at::Tensor q = seeded_normal(matrices_[i].cols, matrices_[i].rank, seed);
    orthogonalise(q, options_.orthogonalization_epsilon);
    q_[i] = q.to(input_.device());  // drawn and orthogonalised on the host: one Q everywhere
  }
}

at::Tensor PowerSgdCodec::first_round_values() {
  ensure_q();
  std::vector<at::Tensor> parts;
  parts.reserve(matrices_.size() + dense_.size());
  for (std::size_t i = 0; i < matrices_.size(); ++i) {
    const Matrix& m = matrices_[i];
    const at::Tensor mat = input_.narrow(0, m.offset, m.rows * m.cols).view({m.rows, m.cols});
    if (q_[i].device() != input_.device()) q_[i] = q_[i].to(input_.device());  // loaded state
    parts.push_back(mat.mm(q_[i]).reshape({-1}));
  }
  for (const Span& d : dense_) parts.push_back(input_.narrow(0, d.offset, d.numel));
  // The round's values go to the network from host memory.
  return parts.empty() ? at::zeros({0}, at::kFloat) : at::cat(parts).to(at::kCPU);
}

at::Tensor PowerSgdCodec::second_round_values(const at::Tensor& host_sum) {
  const at::Tensor sum = host_sum.to(input_.device());
  std::int64_t at_ = 0;
  std::vector<at::Tensor> qs;
  qs.reserve(matrices_.size());
  for (std::size_t i = 0; i < matrices_.size(); ++i) {
    const Matrix& m = matrices_[i];
    p_[i] = sum.narrow(0, at_, m.rows * m.rank).view({m.rows, m.rank}).clone();
    at_ += m.rows * m.rank;
    orthogonalise(p_[i], options_.orthogonalization_epsilon);
    const at::Tensor mat = input_.narrow(0, m.offset, m.rows * m.cols).view({m.rows, m.cols});
    qs.push_back(mat.t().mm(p_[i]).reshape({-1}));
  }
  dense_sum_ = sum.narrow(0, at_, sum.numel() - at_).clone();
  return qs.empty() ? at::zeros({0}, at::kFloat) : at::cat(qs).to(at::kCPU);
}

void PowerSgdCodec::finish_compressed(const at::Tensor& host_q_sum, int workers) {
  const at::Tensor q_sum = host_q_sum.to(input_.device());
  result_ = at::empty({numel_}, input_.options());
  std::int64_t at_ = 0;
  for (std::size_t i = 0; i < matrices_.size(); ++i) {
    const Matrix& m = matrices_[i];
    const at::Tensor q = q_sum.narrow(0, at_, m.cols * m.rank).view({m.cols, m.rank});
    at_ += m.cols * m.rank;
    if (options_.warm_start) q_[i] = q.clone();  // PyTorch keeps the all-reduced Q
    result_.narrow(0, m.offset, m.rows * m.cols)
        .view({m.rows, m.cols})
        .copy_(p_[i].mm(q.t()).div_(static_cast<double>(workers)));
  }
  std::int64_t d_at = 0;
  for (const Span& d : dense_) {
    result_.narrow(0, d.offset, d.numel).copy_(dense_sum_.narrow(0, d_at, d.numel))
        .div_(static_cast<double>(workers));
    d_at += d.numel;
  }
  if (options_.error_feedback) {
    // What this worker wanted to contribute minus what everyone applied. Dense tensors are
    // sent exactly, so they keep no error (as in epfml/powersgd).
    error_ = input_ - result_;
    for (const Span& d : dense_) error_.narrow(0, d.offset, d.numel).zero_();
  }
  input_ = at::Tensor();
}

Round PowerSgdCodec::begin_exchange(const at::Tensor& grad) {
  check_gradient(grad, "powersgd encode", /*on_device=*/true);
  if (grad.numel() != numel_) {
    throw std::invalid_argument("powersgd: gradient has " + std::to_string(grad.numel()) +
                                " elements, the layout " + std::to_string(numel_));
  }
  // The factors of a matrix with a NaN or Inf are all non-finite, and its decoder refuses
  // non-finite values: such a gradient (a diverged model) is refused here, where it enters.
  if (!at::isfinite(grad).all().item<bool>()) {
    throw std::invalid_argument("powersgd: the gradient holds NaN or Inf values (has training "
                                "diverged?); low-rank factors of it cannot be decoded");
  }
  Round round;
  round.op = RoundOp::kSum;
  dense_step_ = step_ < options_.start_step;
  if (dense_step_) {
    set_last_density(1.0);
    round.values = grad.to(at::kCPU);
    return round;
  }
  if (options_.error_feedback) {
    ensure_state(error_, grad, "powersgd");
    input_ = grad + error_;
  } else {
    input_ = grad.clone();
  }
  set_last_density(static_cast<double>(compressed_floats()) / static_cast<double>(std::max<std::int64_t>(1, numel_)));
  round.values = first_round_values();
  return round;
}

std::optional<Round> PowerSgdCodec::continue_exchange(int round, RoundOutcome&& outcome) {
  if (!outcome.sum.defined()) throw std::logic_error("powersgd: a round delivered no sum");
  if (dense_step_ && round == 0) {
    result_ = outcome.sum.div(static_cast<double>(workers_));
    ++step_;
    return std::nullopt;
  }
  if (round == 0) {
    Round next;
    next.op = RoundOp::kSum;
    next.values = second_round_values(outcome.sum);
    return next;
  }
  if (round == 1) {
    finish_compressed(outcome.sum, workers_);
    ++step_;
    return std::nullopt;
  }
  throw std::logic_error("powersgd: no round " + std::to_string(round));
}

at::Tensor PowerSgdCodec::exchange_result() { return result_; }

Bytes PowerSgdCodec::encode(const at::Tensor& grad) {
  // The one-worker exchange: the sums of both rounds are this worker's own vectors.
  Round first = begin_exchange(grad);
  ByteWriter writer;
  write_header(writer, CodecId::kPowerSgd, kFormatVersion, static_cast<std::uint64_t>(numel_));
  if (dense_step_) {
    writer.u32(0);  // rank 0: a dense step, numel floats follow
    const at::Tensor values = first.values.contiguous();
    writer.f32_array(values.data_ptr<float>(), static_cast<std::size_t>(values.numel()));
    result_ = values.clone();
    ++step_;
    return writer.take();
  }
  const at::Tensor q_values = second_round_values(first.values).contiguous();
  writer.u32(static_cast<std::uint32_t>(options_.rank));
  std::int64_t at_ = 0;
  for (std::size_t i = 0; i < matrices_.size(); ++i) {
    const Matrix& m = matrices_[i];
    const at::Tensor p = p_[i].to(at::kCPU).contiguous();
    writer.f32_array(p.data_ptr<float>(), static_cast<std::size_t>(p.numel()));
    writer.f32_array(q_values.data_ptr<float>() + at_, static_cast<std::size_t>(m.cols * m.rank));
    at_ += m.cols * m.rank;
  }
  const at::Tensor dense = dense_sum_.to(at::kCPU).contiguous();
  writer.f32_array(dense.data_ptr<float>(), static_cast<std::size_t>(dense.numel()));
  finish_compressed(q_values, 1);
  ++step_;
  return writer.take();
}

at::Tensor PowerSgdCodec::decode(ByteSpan payload) const { return decode_on(payload, c10::Device(c10::kCPU)); }

at::Tensor PowerSgdCodec::decode_to(ByteSpan payload, const c10::Device& device) const {
  return decode_on(payload, device);
}

at::Tensor PowerSgdCodec::decode_on(ByteSpan payload, const c10::Device& device) const {
  ByteReader reader(payload, kWhat);
  const PayloadHeader h = read_header(reader, CodecId::kPowerSgd, "powersgd", kFormatVersion);
  if (static_cast<std::int64_t>(h.numel) != numel_) {
    reader.fail("describes " + std::to_string(h.numel) + " elements, this layout has " +
                std::to_string(numel_));
  }
  const std::uint32_t rank = reader.u32("rank");
  auto floats = [&](std::int64_t count, const char* field) {
    return read_f32_tensor(reader, count, field).to(device);
  };
  if (rank == 0) {
    at::Tensor out = floats(numel_, "dense values");
    reader.expect_end();
    return out;
  }
  if (rank != static_cast<std::uint32_t>(options_.rank)) {
    reader.fail("rank " + std::to_string(rank) + ", this codec uses rank " +
                std::to_string(options_.rank));
  }
  at::Tensor out = at::empty({numel_}, at::TensorOptions().dtype(at::kFloat).device(device));
  for (const Matrix& m : matrices_) {
    const at::Tensor p = floats(m.rows * m.rank, "P").view({m.rows, m.rank});
    const at::Tensor q = floats(m.cols * m.rank, "Q").view({m.cols, m.rank});
    out.narrow(0, m.offset, m.rows * m.cols).view({m.rows, m.cols}).copy_(p.mm(q.t()));
  }
  for (const Span& d : dense_) out.narrow(0, d.offset, d.numel).copy_(floats(d.numel, "dense tensor"));
  reader.expect_end();
  if (!at::isfinite(out).all().item<bool>()) reader.fail("non-finite values");
  return out;
}

Bytes PowerSgdCodec::save_state() const {
  CodecState state(name());
  state.put_u64("step", static_cast<std::uint64_t>(step_));
  state.put_tensor("error", error_.defined() ? error_.to(at::kCPU) : error_);
  for (std::size_t i = 0; i < q_.size(); ++i) {
    if (q_[i].defined()) state.put_tensor("q" + std::to_string(i), q_[i].to(at::kCPU).reshape({-1}));
  }
  return state.serialize();
}

void PowerSgdCodec::load_state(ByteSpan bytes) {
  if (bytes.size == 0) {
    step_ = 0;  // the initial state
    error_ = at::Tensor();
    q_.assign(matrices_.size(), at::Tensor());
    return;
  }
  const CodecState state = CodecState::parse(bytes, name());
  const at::Tensor error = state.tensor("error");
  if (error.defined() && error.numel() != numel_) throw DecodeError("powersgd state: error size");
  std::vector<at::Tensor> q(matrices_.size());
  for (std::size_t i = 0; i < matrices_.size(); ++i) {
    at::Tensor t = state.tensor("q" + std::to_string(i));
    if (!t.defined()) continue;
    if (t.numel() != matrices_[i].cols * matrices_[i].rank) throw DecodeError("powersgd state: Q size");
    q[i] = t.view({matrices_[i].cols, matrices_[i].rank}).clone();
  }
  step_ = state.counter("step");
  error_ = error;
  q_ = std::move(q);
}

CodecWork PowerSgdCodec::round_work(int call, std::int64_t numel) const {
  const double n = static_cast<double>(numel);
  if (dense_step_) {
    return call == 1 ? CodecWork::memory(8 * n) + CodecWork::compute(n) : CodecWork{};
  }
  double dense = 0;
  for (const Span& d : dense_) dense += static_cast<double>(d.numel);
  CodecWork w;
  for (const Matrix& m : matrices_) {
    const double rows = static_cast<double>(m.rows);
    const double cols = static_cast<double>(m.cols);
    const double r = static_cast<double>(m.rank);
    const double product = 2 * rows * cols * r;  // one (rows x cols)(cols x r) product
    switch (call) {
      case 0:
        w += CodecWork::compute(product) + CodecWork::memory(4 * rows * cols + 4 * rows * r);
        break;
      case 1:
        w += CodecWork::compute(rows * (2 * r * (r - 1) + 3 * r) + product);
        w += CodecWork::memory(8 * rows * r + 4 * rows * cols + 4 * cols * r);
        break;
      case 2:
        w += CodecWork::compute(product + rows * cols);
        w += CodecWork::memory(12 * rows * cols + 8 * cols * r);
        break;
      default: break;
    }
  }
  switch (call) {
    case 0: w += CodecWork::memory(12 * n + 8 * dense) + CodecWork::compute(n); break;
    case 1: w += CodecWork::memory(8 * dense); break;
    case 2:
      w += CodecWork::memory(12 * dense) + CodecWork::compute(dense);
      if (options_.error_feedback) w += CodecWork::memory(12 * n) + CodecWork::compute(n);
      break;
    default: break;
  }
  return w;
}

CodecWork PowerSgdCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode:
      if (dense_step_) return CodecWork::memory(4 * n + bytes);
      return round_work(0, numel) + round_work(1, numel) + round_work(2, numel) +
             CodecWork::memory(bytes);
    case CodecOp::kDecode: {
      CodecWork w = CodecWork::memory(bytes + 4 * n);
      for (const Matrix& m : matrices_) {
        w += CodecWork::compute(2 * static_cast<double>(m.rows * m.cols * m.rank));
      }
      return w;
    }
    default: return MultiRoundCodec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
