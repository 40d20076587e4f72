// A configuration error that names where in the scenario JSON it occurred and what was expected.
// Lives in the lowest layer so codecs, network builders and the scenario loader share one type;
// the CLI turns it into exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace gradwire {

class ConfigError : public std::runtime_error {
 public:
  /// `path` is a JSON pointer-like path such as "training.optimizer.lr".
  ConfigError(std::string path, const std::string& message)
      : std::runtime_error(path + ": " + message), path_(std::move(path)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace gradwire
