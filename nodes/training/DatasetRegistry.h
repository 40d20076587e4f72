// The dataset kinds a scenario can name, declared once (common/KindRegistry.h): each one's
// keys, how it reads and writes them, the samples it yields (what a model must read), its
// training set's size before it is loaded, and how it is loaded. Scenario validation, `gradwire
// datasets`, docs/models.md and TrainingSetup read this declaration.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/JsonFields.h"
#include "common/KindRegistry.h"
#include "nodes/training/DatasetSpec.h"
#include "nodes/training/Model.h"

namespace gradwire {

struct DatasetInfo : KindDeclaration {
  bool augment_by_default = false;  ///< `augment`'s default (images that CIFAR studies augment)
  /// Reads the kind's own keys (`params`) into `spec`, with the checks between them and on the
  /// file system (a missing folder is a scenario error); ConfigError at dataset.<key>.
  std::function<void(const JsonFields& dataset, DatasetSpec& spec)> read;
  /// Its keys back as the resolved dataset object carries them.
  std::function<void(const DatasetSpec& spec, nlohmann::json& dataset)> write;
  /// The samples it yields, as a model sees them (a text's vocabulary is its cap until read).
  std::function<ModelInput(const DatasetSpec&)> input;
  /// Training samples after train_limit; may read the data (a text is counted).
  std::function<std::int64_t(const DatasetSpec&)> train_size;
  /// Test samples after test_limit, from its keys (the memory check counts them); optional.
  std::function<std::int64_t(const DatasetSpec&)> test_size;
  /// Loads both parts; DatasetError for unusable data.
  std::function<DatasetSplit(const DatasetSpec&, std::uint64_t seed)> load;
};

class DatasetRegistry : public KindRegistry<DatasetInfo>, public BuiltinKinds<DatasetRegistry> {
 public:
  /// `kind`, `augment` and `partition`: the keys every dataset object takes.
  std::vector<ParamSpec> common_params() const;

 private:
  friend class BuiltinKinds<DatasetRegistry>;
  DatasetRegistry();
};

/// Reads `dataset`: the kind, its keys, augmentation (images only) and the partition.
DatasetSpec read_dataset(const JsonFields& dataset);
/// The resolved `dataset` object.
nlohmann::json dataset_json(const DatasetSpec& dataset);
/// Loads the training and test sets (ConfigError at dataset.path for unusable data) with the
/// augmentation flag set.
DatasetSplit load_dataset(const DatasetSpec& dataset, std::uint64_t seed);

/// docs/models.md's datasets block and `gradwire datasets --json`.
std::string dataset_reference_markdown();
nlohmann::json dataset_reference_json();

}  // namespace gradwire
