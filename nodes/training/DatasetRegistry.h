// The dataset kinds a scenario can name, declared once (common/KindRegistry.h): each one's
// keys (bound to DatasetSpec's members), the samples it yields (what a model must read), its
// training set's size before it is loaded, and how it is loaded. Scenario validation, `gradwire
// datasets`, docs/models.md and TrainingSetup read this declaration.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/FieldTable.h"
#include "common/JsonFields.h"
#include "common/KindRegistry.h"
#include "nodes/training/DatasetSpec.h"
#include "nodes/training/Model.h"

namespace gradwire {

struct DatasetInfo : KindDeclaration {
  bool augment_by_default = false;  ///< `augment`'s default (images that CIFAR studies augment)
  /// Its own keys, each bound to the DatasetSpec member it fills: reading a `dataset` object,
  /// writing the resolved one and the listings all come from this table.
  FieldTable<DatasetSpec> fields;
  /// Rules between its keys and on the file system (a missing folder is a scenario error),
  /// after they are read; ConfigError at dataset.<key>. Optional.
  std::function<void(DatasetSpec& spec, const JsonFields& dataset)> check;
  /// The samples it yields, as a model sees them (a text's vocabulary is its cap until read).
  std::function<ModelInput(const DatasetSpec&)> input;
  /// Training samples after train_limit; may read the data (a text is counted).
  std::function<std::int64_t(const DatasetSpec&)> train_size;
  /// Test samples after test_limit, from its keys (the memory check counts them); optional.
  std::function<std::int64_t(const DatasetSpec&)> test_size;
  /// Loads both parts; DatasetError for unusable data.
  std::function<DatasetSplit(const DatasetSpec&, std::uint64_t seed)> load;

  /// Declares `keys` as the kind's keys besides the common ones.
  void declare(FieldTable<DatasetSpec> keys) {
    fields = std::move(keys);
    params = fields.params();
  }
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
