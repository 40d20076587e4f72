// `adacomp`: Adaptive Residual Gradient Compression (Chen, Choi, Brand, Agrawal, Zhang,
// Gopalakrishnan, AAAI 2018, arXiv:1712.02679). Per parameter tensor, with residue r:
//     G = r + g            (accumulated gradient)
//     H = G + g            (the latest gradient counted twice: favours fresh activity)
//   split G into bins of L_T consecutive elements; gmax_b = max |G| in bin b;
//   send i iff |H_i| >= gmax_b of its bin (and G_i != 0), as sign(G_i) * scale, where the
//   tensor's scale is the mean of its bins' gmax; r = G - sent.
// The selection is local to a bin (no sort), and the number sent adapts to the gradient by
// itself ("self-adjusting": one hyper-parameter, L_T). Bin lengths: 50 for convolutional
// layers, 500 for fully connected / recurrent ones (the paper's settings); a tensor with 4 dimensions counts as convolutional.
//
// Wire (CodecId::kAdaComp, codecs/README.md): header | u8 index coding | u32 k | u32 index
// bytes | u32 S | S x (u32 count, f32 scale) | index section | ceil(k/8) sign bytes.
// Not summable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"
#include "codecs/kernels/SparseKernels.h"

namespace gradwire {

struct AdaCompOptions {
  std::int64_t bin_conv = 50;   ///< L_T for convolutional layers (paper: 50)
  std::int64_t bin_fc = 500;    ///< L_T for fully connected / recurrent layers (paper: 500)
};

class AdaCompCodec : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;
  AdaCompCodec(AdaCompOptions options, const CodecContext& ctx);
  ~AdaCompCodec() override;

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// Encode: one pass, G = r + g (read 8n, write 4n) with the last sends settled and the bin
  /// maxima of |G| in the same pass, the test |G + g| >= bin max from cache, the k sent
  /// positions and values written (8k), the payload written; about 6 operations per element.
  /// Bin-local, so no selection. Decode: zero fill + scatter.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;
  const at::Tensor& residual() const;

  static at::Tensor decode_payload(ByteSpan payload, std::uint64_t max_elements);

 private:
  /// The bins of one segment without AVX-512: appends at indices_[k..] and kept_[k..].
  void scan_portable(float* r, const float* g, std::int64_t begin, std::int64_t end, std::int64_t bin,
                     const PendingSends& pending, std::size_t& k, BinScan& scan);
  /// Takes the last encode's scales off its sent entries' residue (residual() and
  /// save_state() show the residue as the algorithm defines it).
  void settle_pending() const;

  AdaCompOptions options_;
  std::vector<LayerSlice> layers_;
  std::uint64_t max_elements_;
  std::unique_ptr<at::Tensor> residual_;
  std::vector<std::uint32_t> indices_;  ///< scratch of encode: sent positions (grown, not shrunk)
  std::vector<float> kept_;             ///< scratch of encode: G at the sent positions
  std::vector<std::uint8_t> selected_;  ///< scratch of encode: one bin's test, 0/1 per element
  // The last encode's sends, whose residue still holds G (not G - sign(G) * scale): the
  // next encode settles them bin by bin while the bin is in cache, instead of a scattered
  // pass over the whole residue now. Per plan segment j: positions pending_indices_[
  // pending_bounds_[j] .. pending_bounds_[j+1]) with scale pending_scales_[j]; no bounds:
  // nothing pending. Mutable: residual() and save_state() settle them first.
  mutable std::vector<std::uint32_t> pending_indices_;
  mutable std::vector<std::size_t> pending_bounds_;
  mutable std::vector<float> pending_scales_;
  // The same sends as the AVX-512 scan's test masks (one per 16 elements of a bin), which it
  // settles lane-wise inside its pass; valid when the last scan was that kernel's.
  std::vector<std::uint16_t> pending_masks_;
  bool pending_masks_valid_ = false;
  std::vector<std::uint16_t> masks_;  ///< scratch of encode: this scan's test masks
};

}  // namespace gradwire
