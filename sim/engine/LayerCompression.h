// What a codec that selects per tensor (adacomp, dgc, sdagc) sent of each parameter tensor,
// over a run: the numbers behind per-layer compression, such as AdaComp's ~40x on
// convolutional against ~200x on fully connected layers. Tensors are grouped by their kind of
// layer, read from the shape: "conv" (4-D weights), "fc" (2-D: fully connected, recurrent and
// embedding weights), "vector" (1-D and scalars: biases, normalisation) and "other".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codecs/CodecRegistry.h"
#include "codecs/TensorSend.h"

namespace gradwire {

class LayerCompression {
 public:
  /// The model's parameter tensors in order (what StepRecord::tensors is indexed by).
  explicit LayerCompression(std::vector<LayerSlice> layers);

  /// "conv", "fc", "vector" or "other" for a tensor of this shape.
  static std::string layer_type(const std::vector<std::int64_t>& shape);

  /// One worker's sends in one step; ignored unless it has one entry per tensor.
  void add(const std::vector<TensorSend>& sends);
  /// The step's density per layer type over the sends added since the last call (null when
  /// none were), for its step line; then starts the next step.
  nlohmann::json end_step();
  /// Per tensor and per layer type over the run (null when no sends were added): elements,
  /// mean density, mean payload bytes per worker and step, and the compression ratio
  /// (4 bytes per element over those bytes).
  nlohmann::json summary() const;

 private:
  struct Totals {
    std::int64_t numel = 0;
    double sent = 0;
    double bytes = 0;
  };
  nlohmann::json totals_json(const Totals& t, double sends) const;

  std::vector<LayerSlice> layers_;
  std::vector<std::string> types_;      ///< per tensor
  std::vector<std::string> type_order_;  ///< the types present, in first-seen order
  std::vector<Totals> run_;             ///< per tensor, over the run
  std::vector<double> step_sent_;       ///< per tensor, this step
  double run_sends_ = 0;   ///< worker-steps added over the run
  double step_sends_ = 0;  ///< worker-steps added this step
};

}  // namespace gradwire
