// The folder a test or benchmark of real programs (`gradwire emulate`, a real kernel's network)
// writes its scenarios into: open to every user, since the programs may run as another one,
// and scenarios readable by all.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace gradwire::testing {

/// Makes `dir` afresh, empty and open to every user.
inline void make_open_folder(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);
}

/// Writes `dir`/NAME.json: `hosts` workers on `network`, runs under `dir`/runs; its path.
inline std::string write_scenario(const std::filesystem::path& dir, const std::string& name,
                                  int hosts, const nlohmann::json& network) {
  namespace fs = std::filesystem;
  const nlohmann::json doc = {{"gradwire", 1},
                              {"name", name},
                              {"training", {{"workers", hosts}}},
                              {"network", network},
                              {"output", {{"dir", (dir / "runs").string()}}}};
  const std::string path = (dir / (name + ".json")).string();
  std::ofstream(path) << doc.dump(2);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                            fs::perms::others_read);
  return path;
}

}  // namespace gradwire::testing
