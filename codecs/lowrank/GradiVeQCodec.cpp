#include "codecs/lowrank/GradiVeQCodec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <ATen/ATen.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/quantize/LevelQuantizer.h"
#include "codecs/wire/TensorWire.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

constexpr const char* kWhat = "gradiveq payload";
enum Mode : std::uint8_t { kDenseSlices = 0, kCoefficients = 1, kQuantizedCoefficients = 2 };
// header | u8 mode | u32 first | u32 count | u32 d | u32 K
constexpr std::size_t kPrefix = kPayloadHeaderSize + 1 + 4 * 4;
// QSGD bucket for the coefficients: the bucket size Alistarh et al. use in their experiments.
constexpr std::uint32_t kQsgdBucket = 512;

std::int64_t slice_count(std::int64_t numel, std::int64_t d) { return (numel + d - 1) / d; }

struct Fields {
  PayloadHeader header;
  std::uint8_t mode = 0;
  std::uint32_t first = 0, count = 0, d = 0, k = 0;
};

Fields read_fields(ByteReader& reader) {
  Fields f;
  f.header = read_header(reader, CodecId::kGradiVeQ, "gradiveq", GradiVeQCodec::kFormatVersion);
  f.mode = reader.u8("mode");
  f.first = reader.u32("first slice");
  f.count = reader.u32("slice count");
  f.d = reader.u32("slice length");
  f.k = reader.u32("components");
  if (f.mode > kQuantizedCoefficients) reader.fail("unknown mode " + std::to_string(f.mode));
  if (f.d == 0) reader.fail("slice length 0");
  const auto slices = static_cast<std::uint64_t>(
      slice_count(static_cast<std::int64_t>(f.header.numel), f.d));
  if (static_cast<std::uint64_t>(f.first) + f.count > slices) {
    reader.fail("slices [" + std::to_string(f.first) + ", " +
                std::to_string(static_cast<std::uint64_t>(f.first) + f.count) +
                ") exceed the gradient's " + std::to_string(slices));
  }
  return f;
}

/// Elements covered by slices [first, first + count) of a gradient of `numel`.
std::int64_t covered(const Fields& f) {
  const auto numel = static_cast<std::int64_t>(f.header.numel);
  const std::int64_t begin = static_cast<std::int64_t>(f.first) * f.d;
  const std::int64_t end = std::min<std::int64_t>(numel, (static_cast<std::int64_t>(f.first) + f.count) * f.d);
  return std::max<std::int64_t>(0, end - begin);
}


}  // namespace

GradiVeQCodec::GradiVeQCodec(Options options)
    : options_(options),
      basis_(std::make_unique<torch::Tensor>()),
      moment_(std::make_unique<torch::Tensor>()) {
  if (options_.slice < 1 || options_.components < 1 || options_.components > options_.slice) {
    throw std::invalid_argument("gradiveq: need 1 <= components <= slice");
  }
  if (options_.warmup_steps < 1) throw std::invalid_argument("gradiveq: warmup_steps must be >= 1");
  if (options_.refit_every > 0 && options_.refit_steps < 1) {
    throw std::invalid_argument("gradiveq: refit_steps must be >= 1 when refitting");
  }
  if (options_.qsgd_levels > 0) {
    coefficient_codec_ = std::make_unique<LevelQuantizer>(
        LevelQuantizer::Levels::kUniform, options_.qsgd_levels, kQsgdBucket,
        LevelQuantizer::Norm::kL2, options_.seed, options_.rank);
  }
}

GradiVeQCodec::~GradiVeQCodec() = default;

bool GradiVeQCodec::compressed_step(std::int64_t step) const {
  if (step < options_.warmup_steps) return false;
  if (options_.refit_every == 0) return true;
  const std::int64_t cycle = options_.refit_every + options_.refit_steps;
  return (step - options_.warmup_steps) % cycle < options_.refit_every;
}

bool GradiVeQCodec::compressing() const {
  return compressed_step(step_) && basis_->defined();
}

void GradiVeQCodec::set_basis(const torch::Tensor& basis) {
  if (basis.dim() != 2 || basis.size(0) != options_.slice || basis.size(1) != options_.components) {
    throw std::invalid_argument("gradiveq: basis must be slice x components");
  }
  *basis_ = basis.to(at::kFloat).contiguous().clone();
}

Bytes GradiVeQCodec::encode_range(const torch::Tensor& grad, std::int64_t first,
                                  std::int64_t count, const torch::Tensor* coefficients) {
  const std::int64_t d = options_.slice;
  const std::int64_t k = options_.components;
  const std::int64_t numel = grad.numel();
  const std::uint8_t mode = coefficients == nullptr ? kDenseSlices
                            : coefficient_codec_   ? kQuantizedCoefficients
                                                   : kCoefficients;
  ByteWriter writer;
  write_header(writer, CodecId::kGradiVeQ, kFormatVersion, static_cast<std::uint64_t>(numel));
  writer.u8(mode);
  writer.u32(static_cast<std::uint32_t>(first));
  writer.u32(static_cast<std::uint32_t>(count));
  writer.u32(static_cast<std::uint32_t>(d));
  writer.u32(static_cast<std::uint32_t>(k));
  if (mode == kDenseSlices) {
    const std::int64_t begin = std::min(numel, first * d);
    const std::int64_t end = std::min(numel, (first + count) * d);
    writer.f32_array(grad.data_ptr<float>() + begin, static_cast<std::size_t>(end - begin));
    return writer.take();
  }
  const at::Tensor rows = coefficients->narrow(0, first, count).contiguous();
  if (mode == kCoefficients) {
    writer.f32_array(rows.data_ptr<float>(), static_cast<std::size_t>(rows.numel()));
  } else {
    const Bytes nested = coefficient_codec_->encode(rows.reshape({-1}));
    writer.raw(nested.data(), nested.size());
  }
  return writer.take();
}

std::vector<Bytes> GradiVeQCodec::encode_chunks(const torch::Tensor& grad,
                                                const std::vector<std::int64_t>& bounds) {
  check_gradient(grad, "gradiveq encode");
  check_chunk_bounds(grad.numel(), bounds);
  const std::int64_t d = options_.slice;
  const std::int64_t slices = slice_count(grad.numel(), d);
  at::Tensor coefficients;
  const bool compress = compressing();
  if (compress) {
    // Zero-pad to whole slices, then one (S x d)(d x K) product for the whole gradient.
    at::Tensor padded = at::zeros({slices * d}, at::kFloat);
    padded.narrow(0, 0, grad.numel()).copy_(grad);
    coefficients = padded.view({slices, d}).mm(*basis_);
  }
  last_density_ = compress ? static_cast<double>(options_.components) / static_cast<double>(d) : 1.0;
  // Chunks follow the requested count but cut at slice boundaries, so each chunk's
  // coefficients decode on their own (the ring decodes chunk by chunk and concatenates).
  const auto n = static_cast<std::int64_t>(bounds.size()) - 1;
  std::vector<Bytes> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t first = slices * i / n;
    const std::int64_t last = slices * (i + 1) / n;
    out.push_back(encode_range(grad, first, last - first, compress ? &coefficients : nullptr));
  }
  return out;
}

Bytes GradiVeQCodec::encode(const torch::Tensor& grad) {
  return std::move(encode_chunks(grad, {0, grad.numel()}).front());
}

torch::Tensor GradiVeQCodec::decode(ByteSpan payload) const {
  ByteReader reader(payload, kWhat);
  const Fields f = read_fields(reader);
  const std::int64_t elements = covered(f);
  if (f.mode == kDenseSlices) {
    at::Tensor out = read_f32_tensor(reader, elements, "values");
    reader.expect_end();
    return out;
  }
  if (f.d != options_.slice || f.k != options_.components) {
    reader.fail("basis " + std::to_string(f.d) + "x" + std::to_string(f.k) + ", this codec uses " +
                std::to_string(options_.slice) + "x" + std::to_string(options_.components));
  }
  if (!basis_->defined()) reader.fail("coefficients arrived before a basis was fitted");
  at::Tensor coefficients;
  if (f.mode == kCoefficients) {
    coefficients = read_f32_tensor(reader, static_cast<std::int64_t>(f.count) * f.k, "coefficients");
    reader.expect_end();
  } else {
    if (!coefficient_codec_) reader.fail("quantised coefficients, but qsgd_levels is 0 here");
    const std::size_t rest = reader.remaining();
    const std::uint8_t* nested = reader.take(rest, 1, "qsgd coefficients");
    coefficients = coefficient_codec_->decode(ByteSpan(nested, rest));
    if (coefficients.numel() != static_cast<std::int64_t>(f.count) * f.k) {
      reader.fail("qsgd coefficients hold " + std::to_string(coefficients.numel()) +
                  " values, expected " + std::to_string(static_cast<std::int64_t>(f.count) * f.k));
    }
  }
  const at::Tensor slices = coefficients.view({static_cast<std::int64_t>(f.count), f.k}).mm(basis_->t());
  return slices.reshape({-1}).narrow(0, 0, elements).clone();
}

void GradiVeQCodec::accumulate(Bytes& acc, ByteSpan other) const {
  ByteReader a(ByteSpan(acc), kWhat);
  ByteReader b(other, kWhat);
  const Fields fa = read_fields(a);
  const Fields fb = read_fields(b);
  if (coefficient_codec_) {
    throw std::logic_error("gradiveq: QSGD-coded coefficients are not summable");
  }
  // This codec never writes quantised coefficients, so a payload claiming them is corrupt.
  if (fa.mode == kQuantizedCoefficients || fb.mode == kQuantizedCoefficients) {
    throw DecodeError("gradiveq accumulate: quantised coefficients, but qsgd_levels is 0 here");
  }
  if (fa.header.numel != fb.header.numel || fa.mode != fb.mode || fa.first != fb.first ||
      fa.count != fb.count || fa.d != fb.d || fa.k != fb.k) {
    throw DecodeError("gradiveq accumulate: payloads describe different slices or modes");
  }
  const std::int64_t floats =
      fa.mode == kDenseSlices ? covered(fa) : static_cast<std::int64_t>(fa.count) * fa.k;
  b.take(static_cast<std::size_t>(floats), 4, "values");
  b.expect_end();
  a.take(static_cast<std::size_t>(floats), 4, "values");
  a.expect_end();
  std::uint8_t* dst = acc.data() + kPrefix;
  const std::uint8_t* src = other.data + kPrefix;
  add_f32_array_le(dst, src, static_cast<std::uint64_t>(floats));
}

void GradiVeQCodec::observe_aggregate(const torch::Tensor& update) {
  const std::int64_t d = options_.slice;
  if (!compressed_step(step_) && update.numel() >= d) {
    // Whole slices only: the padded tail would bias the moment towards zero.
    const std::int64_t whole = update.numel() / d;
    const at::Tensor x = update.narrow(0, 0, whole * d).view({whole, d}).to(at::kDouble);
    const at::Tensor m = x.t().mm(x);
    if (moment_->defined()) {
      moment_->add_(m);
    } else {
      *moment_ = m;
    }
  }
  ++step_;
  if (compressed_step(step_) && !compressed_step(step_ - 1)) fit();
}

void GradiVeQCodec::fit() {
  if (!moment_->defined()) return;  // nothing collected (gradients shorter than one slice)
  // Eigenvectors of the d x d second moment, eigenvalues ascending: keep the last K columns.
  const auto eig = at::linalg_eigh(*moment_);
  const at::Tensor vectors = std::get<1>(eig);
  *basis_ = vectors.narrow(1, options_.slice - options_.components, options_.components)
                .to(at::kFloat)
                .contiguous();
  *moment_ = at::Tensor();
}

Bytes GradiVeQCodec::save_state() const {
  CodecState state(name());
  state.put_u64("step", static_cast<std::uint64_t>(step_));
  if (basis_->defined()) state.put_tensor("basis", basis_->reshape({-1}));
  if (moment_->defined()) state.put_tensor("moment", moment_->to(at::kFloat).reshape({-1}));
  if (coefficient_codec_) state.put_bytes("qsgd", coefficient_codec_->save_state());
  return state.serialize();
}

void GradiVeQCodec::load_state(ByteSpan bytes) {
  const std::int64_t d = options_.slice;
  if (bytes.size == 0) {
    step_ = 0;
    *basis_ = at::Tensor();
    *moment_ = at::Tensor();
    return;
  }
  const CodecState state = CodecState::parse(bytes, name());
  const at::Tensor basis = state.tensor("basis");
  const at::Tensor moment = state.tensor("moment");
  if (basis.defined() && basis.numel() != d * options_.components) {
    throw DecodeError("gradiveq state: basis size");
  }
  if (moment.defined() && moment.numel() != d * d) throw DecodeError("gradiveq state: moment size");
  step_ = state.counter("step");
  *basis_ = basis.defined() ? basis.view({d, options_.components}).clone() : at::Tensor();
  *moment_ = moment.defined() ? moment.view({d, d}).to(at::kDouble) : at::Tensor();
  if (coefficient_codec_) coefficient_codec_->load_state(state.bytes("qsgd"));
}

CodecWork GradiVeQCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  const double d = static_cast<double>(options_.slice);
  const double k = static_cast<double>(options_.components);
  const double slices = static_cast<double>(slice_count(numel, options_.slice));
  const double projection = 2 * slices * d * k;
  switch (op) {
    case CodecOp::kEncode: {
      if (!compressing()) return CodecWork::memory(4 * n + bytes);
      CodecWork w = CodecWork::memory(12 * n + 4 * slices * k + bytes) + CodecWork::compute(projection);
      if (coefficient_codec_) {
        w += coefficient_codec_->work(CodecOp::kEncode, static_cast<std::int64_t>(slices * k),
                                      payload_bytes);
      }
      return w;
    }
    case CodecOp::kDecode:
      if (!compressing()) return CodecWork::memory(bytes + 4 * n);
      return CodecWork::memory(bytes + 4 * slices * k + 4 * n) + CodecWork::compute(projection);
    case CodecOp::kAccumulate:
      return CodecWork::memory(3 * bytes) + CodecWork::compute(bytes / 4);
    case CodecOp::kObserve: {
      // Asked after observe_aggregate moved the step on: step_ - 1 is the step observed.
      CodecWork w;
      if (!compressed_step(step_ - 1) && numel >= options_.slice) {
        const double whole = std::floor(n / d) * d;
        w += CodecWork::memory(12 * whole) + CodecWork::compute(2 * whole * d);
      }
      if (compressed_step(step_) && !compressed_step(step_ - 1) && moment_->defined()) {
        w += CodecWork::compute(9 * d * d * d);
      }
      return w;
    }
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
