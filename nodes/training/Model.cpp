// make_model: the one place that turns a scenario's model section into a network.
#include "nodes/training/Model.h"

#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>

#include "nodes/training/LeNet.h"
#include "nodes/training/Mlp.h"
#include "nodes/training/TorchScriptModel.h"

namespace gradwire {

std::shared_ptr<Model> make_model(const ModelConfig& config,
                                  const std::vector<std::int64_t>& sample_shape,
                                  std::int64_t classes) {
  if (sample_shape.empty()) throw std::invalid_argument("model: sample shape is empty");
  if (config.kind == "mlp") {
    // An MLP sees every sample flattened, so images work too.
    for (std::int64_t d : sample_shape) {
      if (d < 1) throw std::invalid_argument("mlp: sample dimensions must be at least 1");
    }
    const std::int64_t features = std::accumulate(sample_shape.begin(), sample_shape.end(),
                                                  std::int64_t{1}, std::multiplies<>());
    return std::make_shared<Mlp>(features, config.hidden, classes);
  }
  if (config.kind == "cnn") {
    if (sample_shape.size() != 3) {
      throw std::invalid_argument(
          "model kind \"cnn\" needs image samples shaped {C, H, W}; this dataset's samples "
          "have " + std::to_string(sample_shape.size()) + " dimension(s) (use \"mlp\")");
    }
    return std::make_shared<LeNet>(sample_shape, classes, config);
  }
  if (config.kind == "torchscript") {
    return std::make_shared<TorchScriptModel>(config.path, sample_shape, classes);
  }
  throw std::invalid_argument("unknown model kind \"" + config.kind +
                              "\" (expected \"mlp\", \"cnn\" or \"torchscript\")");
}

}  // namespace gradwire
