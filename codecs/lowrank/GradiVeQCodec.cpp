#include "codecs/lowrank/GradiVeQCodec.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include <ATen/ATen.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/quantize/LevelQuantizer.h"
#include "codecs/sparsify/LayerPlan.h"
#include "codecs/wire/TensorWire.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

constexpr const char* kWhat = "gradiveq payload";
enum Mode : std::uint8_t { kDenseSlices = 0, kCoefficients = 1, kQuantizedCoefficients = 2 };
// header | u8 mode | u32 first | u32 count | u32 d | u32 K | u32 layout
constexpr std::size_t kPrefix = kPayloadHeaderSize + 1 + 5 * 4;
// QSGD bucket for the coefficients: the bucket size Alistarh et al. use in their experiments.
constexpr std::uint32_t kQsgdBucket = 512;
// Slice numbers travel as u32.
constexpr std::int64_t kMaxSlices = std::int64_t{1} << 32;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

CodecTraits gradiveq_traits(const GradiVeQCodec::Options& options) {
  CodecTraits t;
  t.name = "gradiveq";
  // Unquantised coefficients in a basis every worker shares add.
  t.aggregation = options.qsgd_levels == 0 ? Aggregation::kSummable : Aggregation::kDecodeThenSum;
  // A chunk's code is its own slices' projections: the ring sends it while the next is made.
  t.pipelines_chunks = options.pipeline && t.aggregation == Aggregation::kSummable;
  return t;
}

}  // namespace

// The layers in offset order (they tile the gradient), each with its slices numbered across
// the layers, and where each layer's elements and codes start. Slice s of layer l covers
// elements [offset_l + (s - first_l) d, min(end_l, offset_l + (s - first_l + 1) d)); its code
// is K floats when the layer is compressed, else those elements.
struct GradiVeQCodec::Plan {
  struct Layer {
    std::int64_t offset = 0, length = 0;
    bool compressed = false;
    std::int64_t basis = -1;        // index among the compressed layers
    std::int64_t first_slice = 0, slices = 0;
    std::int64_t code_offset = 0;   // code floats before this layer's first slice
  };
  std::int64_t numel = 0;
  std::int64_t d = 1, k = 1;
  std::vector<Layer> layers;
  std::int64_t slices = 0;
  std::int64_t code = 0;      // code floats of the whole gradient when compressing
  std::int64_t bases = 0;     // compressed layers
  std::uint32_t layout = 0;   // checksum of all of the above

  std::size_t layer_of(std::int64_t s) const {
    const auto it = std::upper_bound(layers.begin(), layers.end(), s,
                                     [](std::int64_t v, const Layer& l) { return v < l.first_slice; });
    return static_cast<std::size_t>(it - layers.begin()) - 1;
  }
  /// First element of slice s (s == slices: numel).
  std::int64_t element_at(std::int64_t s) const {
    if (s >= slices) return numel;
    const Layer& l = layers[layer_of(s)];
    return l.offset + (s - l.first_slice) * d;
  }
  /// First code float of slice s when compressing (s == slices: code).
  std::int64_t code_at(std::int64_t s) const {
    if (s >= slices) return code;
    const Layer& l = layers[layer_of(s)];
    return l.code_offset + (l.compressed ? (s - l.first_slice) * k : (s - l.first_slice) * d);
  }
};

struct GradiVeQCodec::Bases {
  std::vector<at::Tensor> basis;   // per compressed layer: d x K float32 (undefined: not fitted)
  std::vector<at::Tensor> moment;  // per compressed layer: sum of x^T x over collected slices, double
  at::Tensor preset;               // set_basis before the plan was known
};

GradiVeQCodec::GradiVeQCodec(Options options, std::vector<LayerSlice> layers, std::int64_t numel)
    : Codec(gradiveq_traits(options)),
      options_(options),
      layers_(std::move(layers)),
      bases_(std::make_unique<Bases>()) {
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
  if (numel > 0) plan_for(numel);
}

GradiVeQCodec::~GradiVeQCodec() = default;

GradiVeQCodec::Plan GradiVeQCodec::make_plan(std::int64_t numel) const {
  Plan p;
  p.numel = numel;
  p.d = options_.slice;
  p.k = options_.components;
  const std::vector<Segment> segments =
      options_.per_layer ? plan_segments(layers_, numel, false) : plan_segments({}, numel, false);
  const bool whole = segments.size() == 1;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto mix = [&h](std::uint64_t v) {
    for (int b = 0; b < 8; ++b) h = (h ^ ((v >> (8 * b)) & 0xffu)) * 0x100000001b3ULL;
  };
  mix(static_cast<std::uint64_t>(numel));
  mix(static_cast<std::uint64_t>(p.d));
  mix(static_cast<std::uint64_t>(p.k));
  for (const Segment& s : segments) {
    Plan::Layer l;
    l.offset = s.offset;
    l.length = s.length;
    // A layer with one basis of its own needs a whole slice to fit it on and the structure of a
    // weight (conv kernels, matrices); biases and normalisation scales travel as they are. One
    // layer for everything (layout unknown or per_layer off) is always compressed.
    l.compressed = whole || (s.dims >= 2 && s.length >= p.d);
    l.basis = l.compressed ? p.bases++ : -1;
    l.first_slice = p.slices;
    l.slices = ceil_div(s.length, p.d);
    l.code_offset = p.code;
    p.slices += l.slices;
    p.code += l.compressed ? l.slices * p.k : l.length;
    p.layers.push_back(l);
    mix(static_cast<std::uint64_t>(l.offset));
    mix(static_cast<std::uint64_t>(l.length));
    mix(l.compressed ? 1 : 0);
  }
  if (p.slices > kMaxSlices) {
    throw std::invalid_argument("gradiveq: more than 2^32 slices");
  }
  p.layout = static_cast<std::uint32_t>(h ^ (h >> 32));
  return p;
}

GradiVeQCodec::Plan GradiVeQCodec::checked_plan(ByteReader& reader, std::uint64_t numel) const {
  // A payload for another length than this codec's (a tool decoding dense slices, or corrupt
  // bytes): its plan, refused when the count could not be a gradient's.
  if (numel / static_cast<std::uint64_t>(options_.slice) >= static_cast<std::uint64_t>(kMaxSlices)) {
    reader.fail("element count " + std::to_string(numel) + " needs more than 2^32 slices");
  }
  return make_plan(static_cast<std::int64_t>(numel));
}

const GradiVeQCodec::Plan& GradiVeQCodec::plan_for(std::int64_t numel) {
  if (!plan_) {
    plan_ = std::make_unique<Plan>(make_plan(numel));
    bases_->basis.assign(static_cast<std::size_t>(plan_->bases), at::Tensor());
    bases_->moment.assign(static_cast<std::size_t>(plan_->bases), at::Tensor());
    if (bases_->preset.defined()) {
      for (auto& b : bases_->basis) b = bases_->preset.clone();
    }
  } else if (plan_->numel != numel) {
    throw std::invalid_argument("gradiveq: gradient has " + std::to_string(numel) +
                                " elements but the codec's bases are for " +
                                std::to_string(plan_->numel) + "; one object per flat gradient");
  }
  return *plan_;
}

std::vector<std::pair<std::int64_t, std::int64_t>> GradiVeQCodec::compressed_layers(std::int64_t numel) const {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const auto& l : make_plan(numel).layers) {
    if (l.compressed) out.emplace_back(l.offset, l.length);
  }
  return out;
}

const at::Tensor& GradiVeQCodec::basis(std::size_t index) const {
  if (index >= bases_->basis.size()) throw std::out_of_range("gradiveq: no compressed layer " + std::to_string(index));
  return bases_->basis[index];
}

bool GradiVeQCodec::compressed_step(std::int64_t step) const {
  if (step < options_.warmup_steps) return false;
  if (options_.refit_every == 0) return true;
  const std::int64_t cycle = options_.refit_every + options_.refit_steps;
  return (step - options_.warmup_steps) % cycle < options_.refit_every;
}

bool GradiVeQCodec::have_bases() const {
  if (!plan_ || bases_->basis.empty()) return false;
  return std::all_of(bases_->basis.begin(), bases_->basis.end(), [](const at::Tensor& b) { return b.defined(); });
}

bool GradiVeQCodec::compressing() const { return compressed_step(step_) && have_bases(); }

void GradiVeQCodec::set_basis(const at::Tensor& basis) {
  if (basis.dim() != 2 || basis.size(0) != options_.slice || basis.size(1) != options_.components) {
    throw std::invalid_argument("gradiveq: basis must be slice x components");
  }
  const at::Tensor b = basis.to(at::kFloat).contiguous().clone();
  if (plan_) {
    for (auto& u : bases_->basis) u = b.clone();
  } else {
    bases_->preset = b;
  }
}

namespace {

struct Fields {
  PayloadHeader header;
  std::uint8_t mode = 0;
  std::uint32_t first = 0, count = 0, d = 0, k = 0, layout = 0;
};

/// Reads and checks the prefix against `plan` (the plan of the header's element count).
Fields read_fields(ByteReader& reader, std::int64_t d, std::int64_t k,
                   const std::function<const GradiVeQCodec::Plan&(std::uint64_t)>& plan_of) {
  Fields f;
  f.header = read_header(reader, CodecId::kGradiVeQ, "gradiveq", GradiVeQCodec::kFormatVersion);
  f.mode = reader.u8("mode");
  f.first = reader.u32("first slice");
  f.count = reader.u32("slice count");
  f.d = reader.u32("slice length");
  f.k = reader.u32("components");
  f.layout = reader.u32("layout");
  if (f.mode > kQuantizedCoefficients) reader.fail("unknown mode " + std::to_string(f.mode));
  if (f.d != d || f.k != k) {
    reader.fail("slices of " + std::to_string(f.d) + " with " + std::to_string(f.k) +
                " components; this codec uses " + std::to_string(d) + " and " + std::to_string(k));
  }
  const GradiVeQCodec::Plan& p = plan_of(f.header.numel);
  if (static_cast<std::int64_t>(f.first) + f.count > p.slices) {
    reader.fail("slices [" + std::to_string(f.first) + ", " +
                std::to_string(static_cast<std::uint64_t>(f.first) + f.count) +
                ") exceed the gradient's " + std::to_string(p.slices));
  }
  if (f.layout != p.layout) {
    reader.fail("layer layout " + std::to_string(f.layout) + " differs from this codec's " +
                std::to_string(p.layout) + " (another layer plan or basis mode)");
  }
  return f;
}

}  // namespace

std::vector<Bytes> GradiVeQCodec::encode_chunks(const at::Tensor& grad,
                                                const std::vector<std::int64_t>& bounds) {
  check_gradient(grad, "gradiveq encode");
  check_chunk_bounds(grad.numel(), bounds);
  const Plan& p = plan_for(grad.numel());
  const std::int64_t d = p.d;
  const bool compress = compressing();
  at::Tensor code;  // the whole gradient's code: per layer its coefficients or its elements
  if (compress) {
    code = at::empty({p.code}, at::kFloat);
    for (const Plan::Layer& l : p.layers) {
      at::Tensor dst = code.narrow(0, l.code_offset, l.compressed ? l.slices * p.k : l.length);
      const at::Tensor src = grad.narrow(0, l.offset, l.length);
      if (!l.compressed) {
        dst.copy_(src);
        continue;
      }
      // Zero-pad the layer to whole slices, then one (S_l x d)(d x K) product.
      at::Tensor padded = at::zeros({l.slices * d}, at::kFloat);
      padded.narrow(0, 0, l.length).copy_(src);
      dst.view({l.slices, p.k}).copy_(padded.view({l.slices, d}).mm(bases_->basis[static_cast<std::size_t>(l.basis)]));
    }
  }
  const std::uint8_t mode = !compress ? kDenseSlices : coefficient_codec_ ? kQuantizedCoefficients : kCoefficients;
  set_last_density(compress && p.numel > 0 ? static_cast<double>(p.code) / static_cast<double>(p.numel) : 1.0);
  // Chunks follow the requested count but cut at slice boundaries (each chunk's code decodes
  // on its own: the ring decodes chunk by chunk and concatenates), balanced by what they
  // carry: code floats when compressing, elements otherwise.
  const auto n = static_cast<std::int64_t>(bounds.size()) - 1;
  const std::int64_t total = compress ? p.code : p.numel;
  const auto carried = [&](std::int64_t s) { return compress ? p.code_at(s) : p.element_at(s); };
  std::vector<std::int64_t> cuts{0};
  for (std::int64_t i = 1; i < n; ++i) {
    const std::int64_t want = total * i / n;
    std::int64_t lo = cuts.back(), hi = p.slices;  // first slice whose start reaches `want`
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (carried(mid) < want) lo = mid + 1; else hi = mid;
    }
    cuts.push_back(lo);
  }
  cuts.push_back(p.slices);
  std::vector<Bytes> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t first = cuts[static_cast<std::size_t>(i)];
    const std::int64_t last = cuts[static_cast<std::size_t>(i) + 1];
    ByteWriter writer;
    write_header(writer, CodecId::kGradiVeQ, kFormatVersion, static_cast<std::uint64_t>(p.numel));
    writer.u8(mode);
    writer.u32(static_cast<std::uint32_t>(first));
    writer.u32(static_cast<std::uint32_t>(last - first));
    writer.u32(static_cast<std::uint32_t>(d));
    writer.u32(static_cast<std::uint32_t>(p.k));
    writer.u32(p.layout);
    if (mode == kDenseSlices) {
      const std::int64_t begin = p.element_at(first);
      writer.f32_array(grad.data_ptr<float>() + begin, static_cast<std::size_t>(p.element_at(last) - begin));
    } else {
      const std::int64_t begin = p.code_at(first);
      const std::int64_t floats = p.code_at(last) - begin;
      if (mode == kCoefficients) {
        writer.f32_array(code.data_ptr<float>() + begin, static_cast<std::size_t>(floats));
      } else {
        const Bytes nested = coefficient_codec_->encode(code.narrow(0, begin, floats).contiguous());
        writer.raw(nested.data(), nested.size());
      }
    }
    out.push_back(writer.take());
  }
  return out;
}

Bytes GradiVeQCodec::encode(const at::Tensor& grad) {
  return std::move(encode_chunks(grad, {0, grad.numel()}).front());
}

at::Tensor GradiVeQCodec::decode(ByteSpan payload) const {
  ByteReader reader(payload, kWhat);
  Plan other;  // the plan of a payload for another length (dense slices only)
  const Fields f = read_fields(reader, options_.slice, options_.components,
                               [&](std::uint64_t numel) -> const Plan& {
                                 if (plan_ && static_cast<std::uint64_t>(plan_->numel) == numel) return *plan_;
                                 other = checked_plan(reader, numel);
                                 return other;
                               });
  const Plan& p = plan_ && static_cast<std::uint64_t>(plan_->numel) == f.header.numel ? *plan_ : other;
  const std::int64_t first = f.first;
  const std::int64_t last = first + f.count;
  const std::int64_t begin = p.element_at(first);
  const std::int64_t elements = p.element_at(last) - begin;
  if (f.mode == kDenseSlices) {
    at::Tensor out = read_f32_tensor(reader, elements, "values");
    reader.expect_end();
    return out;
  }
  if (&p != plan_.get() || !have_bases()) reader.fail("coefficients arrived before a basis was fitted");
  const std::int64_t code_begin = p.code_at(first);
  const std::int64_t floats = p.code_at(last) - code_begin;
  at::Tensor code;
  if (f.mode == kCoefficients) {
    code = read_f32_tensor(reader, floats, "coefficients");
    reader.expect_end();
  } else {
    if (!coefficient_codec_) reader.fail("quantised coefficients, but qsgd_levels is 0 here");
    const std::size_t rest = reader.remaining();
    const std::uint8_t* nested = reader.take(rest, 1, "qsgd coefficients");
    code = coefficient_codec_->decode(ByteSpan(nested, rest));
    if (code.numel() != floats) {
      reader.fail("qsgd coefficients hold " + std::to_string(code.numel()) + " values, expected " +
                  std::to_string(floats));
    }
  }
  at::Tensor out = at::empty({elements}, at::kFloat);
  if (f.count == 0) return out;
  for (std::size_t li = p.layer_of(first); li < p.layers.size(); ++li) {
    const Plan::Layer& l = p.layers[li];
    const std::int64_t s0 = std::max(first, l.first_slice);
    const std::int64_t s1 = std::min(last, l.first_slice + l.slices);
    if (s0 >= s1) break;
    const std::int64_t e0 = p.element_at(s0);
    const std::int64_t e1 = std::min(p.element_at(s1), l.offset + l.length);
    const at::Tensor src = code.narrow(0, p.code_at(s0) - code_begin, p.code_at(s1) - p.code_at(s0));
    at::Tensor dst = out.narrow(0, e0 - begin, e1 - e0);
    if (!l.compressed) {
      dst.copy_(src);
    } else {
      const at::Tensor slices = src.view({s1 - s0, p.k}).mm(bases_->basis[static_cast<std::size_t>(l.basis)].t());
      dst.copy_(slices.reshape({-1}).narrow(0, 0, e1 - e0));
    }
  }
  return out;
}

void GradiVeQCodec::accumulate(Bytes& acc, ByteSpan other) const {
  if (coefficient_codec_) {
    throw std::logic_error("gradiveq: QSGD-coded coefficients are not summable");
  }
  ByteReader a(ByteSpan(acc), kWhat);
  ByteReader b(other, kWhat);
  Plan scratch;
  const auto plan_of = [&](ByteReader& r) {
    return [&](std::uint64_t numel) -> const Plan& {
      if (plan_ && static_cast<std::uint64_t>(plan_->numel) == numel) return *plan_;
      scratch = checked_plan(r, numel);
      return scratch;
    };
  };
  const Fields fa = read_fields(a, options_.slice, options_.components, plan_of(a));
  const Fields fb = read_fields(b, options_.slice, options_.components, plan_of(b));
  // This codec never writes quantised coefficients, so a payload claiming them is corrupt.
  if (fa.mode == kQuantizedCoefficients || fb.mode == kQuantizedCoefficients) {
    throw DecodeError("gradiveq accumulate: quantised coefficients, but qsgd_levels is 0 here");
  }
  if (fa.header.numel != fb.header.numel || fa.mode != fb.mode || fa.first != fb.first ||
      fa.count != fb.count) {
    throw DecodeError("gradiveq accumulate: payloads describe different slices or modes");
  }
  const Plan& p = plan_ && static_cast<std::uint64_t>(plan_->numel) == fa.header.numel ? *plan_ : scratch;
  const std::int64_t last = static_cast<std::int64_t>(fa.first) + fa.count;
  const std::int64_t floats = fa.mode == kDenseSlices ? p.element_at(last) - p.element_at(fa.first)
                                                      : p.code_at(last) - p.code_at(fa.first);
  b.take(static_cast<std::size_t>(floats), 4, "values");
  b.expect_end();
  a.take(static_cast<std::size_t>(floats), 4, "values");
  a.expect_end();
  add_f32_array_le(acc.data() + kPrefix, other.data + kPrefix, static_cast<std::uint64_t>(floats));
}

void GradiVeQCodec::observe_aggregate(const at::Tensor& update) {
  const Plan& p = plan_for(update.numel());
  if (!compressed_step(step_)) {
    for (const Plan::Layer& l : p.layers) {
      // Whole slices only: the padded tail would bias the moment towards zero.
      const std::int64_t whole = l.length / p.d;
      if (!l.compressed || whole == 0) continue;
      const at::Tensor x = update.narrow(0, l.offset, whole * p.d).view({whole, p.d}).to(at::kDouble);
      at::Tensor& m = bases_->moment[static_cast<std::size_t>(l.basis)];
      if (m.defined()) {
        m.add_(x.t().mm(x));
      } else {
        m = x.t().mm(x);
      }
    }
  }
  ++step_;
  if (compressed_step(step_) && !compressed_step(step_ - 1)) fit();
}

void GradiVeQCodec::fit() {
  // Per layer, the eigenvectors of its d x d second moment, eigenvalues ascending: keep the
  // last K columns. A layer with nothing collected (shorter than a slice) keeps what it had.
  for (std::size_t b = 0; b < bases_->moment.size(); ++b) {
    at::Tensor& m = bases_->moment[b];
    if (!m.defined()) continue;
    const at::Tensor vectors = std::get<1>(at::linalg_eigh(m));
    bases_->basis[b] = vectors.narrow(1, options_.slice - options_.components, options_.components)
                           .to(at::kFloat)
                           .contiguous();
    m = at::Tensor();
  }
}

Bytes GradiVeQCodec::save_state() const {
  CodecState state(name());
  state.put_u64("step", static_cast<std::uint64_t>(step_));
  if (plan_) {
    state.put_u64("numel", static_cast<std::uint64_t>(plan_->numel));
    state.put_u64("layout", plan_->layout);
    for (std::size_t b = 0; b < bases_->basis.size(); ++b) {
      const std::string i = std::to_string(b);
      if (bases_->basis[b].defined()) state.put_tensor("basis." + i, bases_->basis[b].reshape({-1}));
      if (bases_->moment[b].defined()) state.put_tensor("moment." + i, bases_->moment[b].to(at::kFloat).reshape({-1}));
    }
  }
  if (coefficient_codec_) state.put_bytes("qsgd", coefficient_codec_->save_state());
  return state.serialize();
}

void GradiVeQCodec::load_state(ByteSpan bytes) {
  const std::int64_t d = options_.slice;
  const std::int64_t k = options_.components;
  if (bytes.size == 0) {
    step_ = 0;
    for (auto& b : bases_->basis) b = at::Tensor();
    for (auto& m : bases_->moment) m = at::Tensor();
    return;
  }
  const CodecState state = CodecState::parse(bytes, name());
  const std::uint64_t numel = state.has("numel") ? state.counter("numel") : 0;
  std::vector<at::Tensor> basis, moment;
  if (numel > 0) {
    if (numel / static_cast<std::uint64_t>(d) >= static_cast<std::uint64_t>(kMaxSlices)) {
      throw DecodeError("gradiveq state: element count " + std::to_string(numel));
    }
    if (plan_ && static_cast<std::uint64_t>(plan_->numel) != numel) {
      throw DecodeError("gradiveq state: for " + std::to_string(numel) + " elements, this codec has " +
                        std::to_string(plan_->numel));
    }
    const Plan p = make_plan(static_cast<std::int64_t>(numel));
    if (state.counter("layout") != static_cast<std::int64_t>(p.layout)) {
      throw DecodeError("gradiveq state: saved for another layer plan (layout " +
                        std::to_string(state.counter("layout")) + ", this codec's " + std::to_string(p.layout) + ")");
    }
    for (std::int64_t b = 0; b < p.bases; ++b) {
      const std::string i = std::to_string(b);
      const at::Tensor u = state.tensor("basis." + i);
      const at::Tensor m = state.tensor("moment." + i);
      if (u.defined() && u.numel() != d * k) throw DecodeError("gradiveq state: basis " + i + " size");
      if (m.defined() && m.numel() != d * d) throw DecodeError("gradiveq state: moment " + i + " size");
      basis.push_back(u.defined() ? u.view({d, k}).clone() : at::Tensor());
      moment.push_back(m.defined() ? m.view({d, d}).to(at::kDouble) : at::Tensor());
    }
    plan_for(static_cast<std::int64_t>(numel));
    bases_->basis = std::move(basis);
    bases_->moment = std::move(moment);
  }
  step_ = static_cast<std::int64_t>(state.counter("step"));
  if (coefficient_codec_) coefficient_codec_->load_state(state.bytes("qsgd"));
}

CodecWork GradiVeQCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  const double d = static_cast<double>(options_.slice);
  const double k = static_cast<double>(options_.components);
  const Plan local = plan_ && plan_->numel == numel ? Plan() : make_plan(numel);
  const Plan& p = plan_ && plan_->numel == numel ? *plan_ : local;
  double compressed_slices = 0;  // slices projected
  double whole = 0;              // elements in whole slices of compressed layers
  for (const Plan::Layer& l : p.layers) {
    if (!l.compressed) continue;
    compressed_slices += static_cast<double>(l.slices);
    whole += static_cast<double>(l.length / p.d * p.d);
  }
  const double projection = 2 * compressed_slices * d * k;
  const double code = static_cast<double>(p.code);
  switch (op) {
    case CodecOp::kEncode: {
      if (!compressing()) return CodecWork::memory(4 * n + bytes);
      CodecWork w = CodecWork::memory(12 * n + 4 * code + bytes) + CodecWork::compute(projection);
      if (coefficient_codec_) {
        w += coefficient_codec_->work(CodecOp::kEncode, static_cast<std::int64_t>(code), payload_bytes);
      }
      return w;
    }
    case CodecOp::kDecode:
      if (!compressing()) return CodecWork::memory(bytes + 4 * n);
      return CodecWork::memory(bytes + 4 * code + 4 * n) + CodecWork::compute(projection);
    case CodecOp::kAccumulate:
      return CodecWork::memory(3 * bytes) + CodecWork::compute(bytes / 4);
    case CodecOp::kObserve: {
      // Asked after observe_aggregate moved the step on: step_ - 1 is the step observed.
      CodecWork w;
      if (!compressed_step(step_ - 1) && whole > 0) {
        w += CodecWork::memory(12 * whole) + CodecWork::compute(2 * whole * d);
      }
      if (compressed_step(step_) && !compressed_step(step_ - 1)) {
        w += CodecWork::compute(9 * d * d * d * static_cast<double>(p.bases));
      }
      return w;
    }
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
