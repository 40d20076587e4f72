// A model the user brings from PyTorch: a TorchScript file (torch.jit.script or trace) trained
// by the same workers, codecs and schemes as the built-in models. `scripts/export-model` writes
// such files with a `gradwire.json` extra file stating the input shape, the classes and the
// forward FLOPs per sample (in total and per layer), so compute profiles work for them.
//
// The module's parameters and buffers are registered on this Model under their TorchScript
// names, sharing storage with the module: the optimizer, gradient flattening and parameter
// loading see exactly the tensors the scripted forward uses, in the module's own order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nodes/training/Model.h"

namespace gradwire {

/// What a TorchScript file says about itself (its `gradwire.json`); absent fields are empty/0.
struct TorchScriptInfo {
  std::vector<std::int64_t> input_shape;  ///< one sample, e.g. {3, 32, 32}
  std::int64_t classes = 0;
  std::int64_t forward_flops_per_sample = 0;
  struct Layer {
    std::string name;
    std::string kind;
    std::int64_t flops = 0;
  };
  std::vector<Layer> layers;  ///< in forward order
  bool has_metadata = false;
  std::int64_t parameters = 0;  ///< elements of the module's parameters (not from the metadata)
};

/// The `torchscript` model's keys.
struct TorchScriptSettings {
  std::string path;  ///< the exported .pt file
};

class TorchScriptModel : public Model {
 public:
  /// Loads `path` on the CPU. Throws ModelFileError when the file is missing or not
  /// TorchScript, the module has no parameters, or its metadata contradicts the data
  /// (`sample_shape`, `classes`).
  TorchScriptModel(const std::string& path, const std::vector<std::int64_t>& sample_shape,
                   std::int64_t classes);
  ~TorchScriptModel() override;

  torch::Tensor forward(torch::Tensor x) override;
  /// From the file's metadata; 0 when the file has none.
  std::int64_t forward_flops_per_sample() const override { return info_.forward_flops_per_sample; }
  /// Switches the scripted module too (dropout, batch normalisation).
  void train(bool on = true) override;
  /// A scripted module's random operations (dropout, ...) use the global generator.
  bool draws_from_global_generator() const override { return true; }

  const TorchScriptInfo& info() const { return info_; }

 private:
  struct Scripted;
  std::unique_ptr<Scripted> scripted_;
  TorchScriptInfo info_;
};

/// Reads only the metadata of a TorchScript file (ModelFileError as above, without the data
/// checks), for scenario validation before any data is loaded.
TorchScriptInfo read_torchscript_info(const std::string& path);

/// One training step's forward and backward on two zero samples shaped `sample_shape` (two:
/// batch normalisation refuses one in training mode), run on a copy of the file loaded anew so
/// the weights a run trains are untouched, with the global generator's state restored after.
/// Returns the width of the outputs ([batch, width]). ModelFileError naming the file with the
/// first line of the model's own error (no LibTorch backtrace) when it cannot train: a forward
/// that fails on such samples, outputs that are not one row of logits per sample, or a
/// backward that fails (no parameter requires a gradient, ...).
std::int64_t try_torchscript_step(const std::string& path,
                                  const std::vector<std::int64_t>& sample_shape);

}  // namespace gradwire
