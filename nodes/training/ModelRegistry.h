// The model kinds a scenario can name, declared once: what data each reads, where it comes
// from, and its keys (ParamSpec). Scenario validation, `gradwire models` and the generated
// table in docs/models.md all read this declaration.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/ParamSpec.h"

namespace gradwire {

/// The samples a model kind reads.
enum class ModelData {
  kAny,             ///< features or images (flattened)
  kImages,          ///< {C, H, W}
  kTokens,          ///< token sequences (language modelling)
  kTokensOrImages,  ///< a language model on tokens, a classifier on images
  kFromFile,        ///< whatever the TorchScript file was exported for
};

struct ModelInfo {
  std::string kind;
  std::string summary;
  ModelData data = ModelData::kAny;
  std::string reference;         ///< the paper or source of the architecture
  std::vector<ParamSpec> params; ///< keys besides `kind`
};

class ModelRegistry {
 public:
  static const ModelRegistry& builtin();
  const std::vector<ModelInfo>& list() const { return models_; }
  /// nullptr when `kind` is not declared.
  const ModelInfo* find(const std::string& kind) const;
  std::vector<std::string> kinds() const;

 private:
  ModelRegistry();
  std::vector<ModelInfo> models_;
};

/// "features or images", "images", ... as the listings say it.
std::string model_data_text(ModelData data);

/// docs/models.md's generated block and `gradwire models --json`.
std::string model_reference_markdown();
nlohmann::json model_reference_json();

}  // namespace gradwire
