// A network family's own keys (common/FieldTable.h, each bound to its config's member) as a
// `network` object takes them and as an entry of a hybrid network's `groups` does: there
// without `server` and `tcp_buffer` (the hybrid network has one server and one TCP
// configuration), with the entry's `workers`. The family's from_json and to_json read and
// write through it, so both forms come from the one table.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/DeclaredFields.h"
#include "common/FieldTable.h"
#include "common/JsonFields.h"
#include "common/ParamSpec.h"

namespace gradwire {

template <typename Config>
class FamilyKeys {
 public:
  FamilyKeys(std::string family, FieldTable<Config> table)
      : family_(std::move(family)),
        table_(std::move(table)),
        group_table_(table_.without({"server", "tcp_buffer"})),
        params_(table_.params()),
        group_params_(group_table_.params()) {}

  const std::vector<ParamSpec>& params(bool group = false) const {
    return group ? group_params_ : params_;
  }
  /// Refuses keys the family does not declare, then reads every declared one into a config
  /// (defaults where absent); ConfigError naming `path`.key.
  Config read(const nlohmann::json& object, const std::string& path, bool group = false) const {
    JsonFields fields(object, path);
    fields.allow(group ? allowed_keys({"family"}, group_params_, {"workers"})
                       : allowed_keys({"family"}, params_));
    Config config;
    (group ? group_table_ : table_).read(fields, config);
    return config;
  }
  /// `family` and every declared key (a group's `workers` is the caller's).
  nlohmann::json write(const Config& config, bool group = false) const {
    nlohmann::json out = {{"family", family_}};
    (group ? group_table_ : table_).write(config, out);
    return out;
  }

 private:
  std::string family_;
  FieldTable<Config> table_;
  FieldTable<Config> group_table_;
  std::vector<ParamSpec> params_;
  std::vector<ParamSpec> group_params_;
};

}  // namespace gradwire
