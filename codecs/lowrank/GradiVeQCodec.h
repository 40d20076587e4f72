// GradiVeQ (Yu, Wu, Li, Mohammadi Amiri, Li, Avestimehr, "GradiVeQ: Vector Quantization for
// Bandwidth-Efficient Gradient Aggregation in Distributed CNN Training", NeurIPS 2018).
//
// As in the paper, each CNN layer's gradient is cut into slices of `slice` (d) consecutive
// elements (the layer's last slice zero-padded), and each layer has its own basis U_l (d x K)
// of the top-K principal directions of its slices: a slice g of layer l is sent as its K
// coefficients c = U_l^T g and decoded as U_l c. Layers come from CodecContext::layers
// (codecs/sparsify/LayerPlan.h); those with at least two dimensions and one whole slice are
// compressed, the others (biases, normalisation scales) travel as their elements. With
// `per_layer` false, or when the layout is unknown, the whole flat gradient is one layer with
// one basis. Because the code is linear, the sum of codes is the code of the sum: ring
// all-reduce adds coefficient vectors hop by hop (Aggregation::kSummable) and decodes once,
// which is the paper's point.
//
// The bases are fitted on *aggregated* gradients of uncompressed steps (observe_aggregate), so
// every worker fits the same U_l and the bases cost no traffic. Schedule (a step counts once
// the aggregate is known): `warmup_steps` uncompressed steps, then `refit_every` compressed
// steps alternating with `refit_steps` uncompressed ones after which every U_l is refitted
// (the paper alternates uncompressed and compressed periods; refit_every 0 keeps the first
// bases). The second moment of each layer's slices is accumulated, not the centred
// covariance: the code must stay linear (no mean offset) for the sums to be exact.
//
// Optional QSGD on the coefficients (`qsgd_levels` > 0) shrinks them further; the payloads are
// then no longer summable and the ring falls back to all-gather.
//
// Payload (codecs/README.md): header | u8 mode (0 dense, 1 coefficients, 2 QSGD coefficients)
// | u32 first slice | u32 slice count | u32 d | u32 K | u32 layout | mode 0: the slices'
// elements (float32, each slice truncated at its layer's end); mode 1: the slices' codes in
// order, float32: K coefficients per slice of a compressed layer, the elements of a slice of a
// dense one; mode 2: a nested qsgd payload of those floats. Slices are numbered across the
// layers in offset order; `layout` is a checksum of the layer plan, so a peer with another
// plan is refused. Chunks for the ring cover whole slices, balanced by code size.
//
// Pipelining (the paper's Sec. 4: compression of one slice overlaps the transfer of the one
// before): unquantised codes declare CodecTraits::pipelines_chunks, so in ring all-reduce with
// codec time charged a worker's first chunk leaves once its own slices are projected, and each
// later hop waits only for its own chunk's share of the encode (`pipeline` false: every chunk
// waits for the whole encode, as other codecs do).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"

namespace gradwire {

class ByteReader;

class GradiVeQCodec : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 2;

  struct Options {
    std::int64_t slice = 64;         ///< d: elements per slice
    std::int64_t components = 8;     ///< K: principal directions kept (compression d / K)
    std::int64_t warmup_steps = 50;  ///< uncompressed steps before the first fit
    std::int64_t refit_every = 500;  ///< compressed steps between refits (0: never refit)
    std::int64_t refit_steps = 10;   ///< uncompressed steps collected for each refit
    std::uint32_t qsgd_levels = 0;   ///< QSGD on the coefficients (0: off, summable)
    bool per_layer = true;           ///< a basis per layer (false: one for the flat gradient)
    bool pipeline = true;            ///< ring: send each chunk as soon as it is encoded
    std::uint64_t seed = 1;
    int rank = 0;
  };

  /// `layers` and `numel`: the flat gradient's layout (CodecContext); empty / 0 when unknown
  /// (the gradient is then one layer, its length taken from the first gradient seen).
  explicit GradiVeQCodec(Options options, std::vector<LayerSlice> layers = {}, std::int64_t numel = 0);
  ~GradiVeQCodec() override;

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// Compressing steps: encode pads each compressed layer to whole slices (12n bytes) and
  /// projects it onto its basis (S_l x d)(d x K): 2 n K operations in all; decode multiplies
  /// back, as many. Uncompressed steps copy. Accumulate adds the floats. Observe: on
  /// collecting steps each layer's second moment x^T x (2 n d operations in all); on the step
  /// that fits, a symmetric eigendecomposition per layer (9 d^3 each, Golub & Van Loan's count
  /// for symmetric QR with eigenvectors).
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  void accumulate(Bytes& acc, ByteSpan other) const override;
  std::vector<Bytes> encode_chunks(const at::Tensor& grad,
                                   const std::vector<std::int64_t>& bounds) override;
  void observe_aggregate(const at::Tensor& update) override;

  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  /// True when the next encode sends coefficients (bases are fitted and the schedule says so).
  bool compressing() const;
  /// Installs one basis (d x K, orthonormal columns) for every compressed layer: tests and
  /// tools. Before the gradient's length is known it is kept until then.
  void set_basis(const at::Tensor& basis);
  /// The layers that get a basis, as (offset, length), in offset order, for a gradient of
  /// `numel` elements.
  std::vector<std::pair<std::int64_t, std::int64_t>> compressed_layers(std::int64_t numel) const;
  /// The fitted basis of compressed layer `index` (undefined before the first fit).
  const at::Tensor& basis(std::size_t index) const;
  /// Steps observed so far.
  std::int64_t steps() const { return step_; }

  struct Plan;

 private:
  bool compressed_step(std::int64_t step) const;
  Plan make_plan(std::int64_t numel) const;
  Plan checked_plan(ByteReader& reader, std::uint64_t numel) const;
  const Plan& plan_for(std::int64_t numel);
  bool have_bases() const;
  void fit();

  Options options_;
  std::vector<LayerSlice> layers_;
  std::unique_ptr<Plan> plan_;  // for numel_ (null until the gradient's length is known)
  std::unique_ptr<Codec> coefficient_codec_;  // QSGD on the coefficients, when asked
  std::int64_t step_ = 0;
  struct Bases;
  std::unique_ptr<Bases> bases_;  // per compressed layer: U (d x K float32) and the moment
};

}  // namespace gradwire
