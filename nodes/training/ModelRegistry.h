// The model kinds a scenario can name, declared once (common/KindRegistry.h): the data each
// reads, where the architecture comes from, its keys (bound to a settings struct of its own
// that ModelConfig::settings holds), the checks that involve its keys and the data, its parameter count before it is built, and how it is built.
// Scenario validation, `gradwire models`, docs/models.md and make_model all read it.
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/FieldTable.h"
#include "common/JsonFields.h"
#include "common/KindRegistry.h"
#include "nodes/training/Model.h"

namespace gradwire {

/// The samples a model kind reads.
enum class ModelData {
  kAny,             ///< features or images (flattened)
  kImages,          ///< {C, H, W}
  kTokens,          ///< token sequences (language modelling)
  kTokensOrImages,  ///< a language model on tokens, a classifier on images
  kFromFile,        ///< whatever the TorchScript file was exported for
};

struct ModelInfo : KindDeclaration {
  ModelData data = ModelData::kAny;
  std::string reference;  ///< the paper or source of the architecture
  /// Its keys read into ModelConfig::settings (its own settings struct), and written back.
  std::function<std::any(const JsonFields& model)> read_settings;
  std::function<void(const ModelConfig& config, nlohmann::json& model)> write_settings;
  /// Rules between its own keys (tied needs embedding = hidden_size); ConfigError at model.<key>.
  std::function<void(const ModelConfig&, const JsonFields& model)> check_keys;
  /// Rules between its keys and the data (patches that divide the image); ConfigError.
  std::function<void(const ModelConfig&, const ModelInput&)> check_data;
  /// Parameters of the model for `input`, counted from its sizes without building it (an upper
  /// bound where the count is not exact), so a run too large for memory is refused before
  /// anything is allocated.
  std::function<double(const ModelConfig&, const ModelInput&)> parameters;
  /// Values a training pass keeps per sample until backward (layer outputs, attention's
  /// sequence^2 x heads scores), counted from its sizes in floating point (no overflow) as an
  /// upper-bound estimate: the memory check multiplies it by the batch. Optional: without it
  /// the check counts the sample and the outputs, twice.
  std::function<double(const ModelConfig&, const ModelInput&)> activations;
  /// Builds it; std::invalid_argument when the samples do not fit.
  std::function<std::shared_ptr<Model>(const ModelConfig&, const ModelInput&)> make;

  /// Declares `keys` as the kind's keys besides `kind`, bound to the members of the kind's own
  /// settings struct, which the model's functions read as `config.settings_as<Settings>()`.
  /// A new model with keys of its own needs nothing added to ModelConfig.
  template <typename Settings>
  void declare(FieldTable<Settings> keys) {
    params = keys.params();
    read_settings = [keys](const JsonFields& model) -> std::any {
      Settings s;
      keys.read(model, s);
      return s;
    };
    write_settings = [keys](const ModelConfig& config, nlohmann::json& model) {
      keys.write(config.settings_as<Settings>(), model);
    };
  }
};

class ModelRegistry : public KindRegistry<ModelInfo>, public BuiltinKinds<ModelRegistry> {
 public:
  /// std::logic_error unless the kind declares its parameter count and how it is built.
  void add(ModelInfo info);

 private:
  friend class BuiltinKinds<ModelRegistry>;
  ModelRegistry();
};

/// "features or images", "images", ... as the listings say it.
std::string model_data_text(ModelData data);

/// Reads `model` through the kinds' declarations (`kind`, then that kind's keys).
ModelConfig read_model(const JsonFields& model);
/// The resolved `model` object.
nlohmann::json model_json(const ModelConfig& model);

/// docs/models.md's generated block and `gradwire models --json`.
std::string model_reference_markdown();
nlohmann::json model_reference_json();

}  // namespace gradwire
