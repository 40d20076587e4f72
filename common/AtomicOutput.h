// Run outputs appear all at once or not at all: files are written to a temporary name and
// renamed; a run directory is assembled as "<dir>/.<name>.partial-<pid>" and renamed into place
// when the run has finished, so an interrupted or failed run never leaves half a result.
#pragma once

#include <string>

namespace gradwire {

/// Writes `content` to `path` via a temporary file in the same directory and rename(2).
/// Throws std::runtime_error with the path on failure.
void write_file_atomically(const std::string& path, const std::string& content);

/// Creates `parent` (and its parents) when missing and checks that run folders can be made in
/// it. Returns "" when they can, else what is wrong, in words ("not a directory", "read-only
/// file system", ...), so a run is refused before it computes anything.
std::string prepare_output_parent(const std::string& parent);

class RunDirectory {
 public:
  /// Prepares `<parent>/.<name>.partial-<pid>` (created now; removed if the process is
  /// interrupted, see InterruptCleanup), and removes staging folders of `name` left by
  /// processes that no longer run (gone, zombies, or exiting after a kill); commit() looks
  /// again.
  RunDirectory(const std::string& parent, const std::string& name);
  /// Removes the staging directory if commit() was never reached.
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  /// Where files go while the run is in progress.
  const std::string& staging() const { return staging_; }
  /// Final location `<parent>/<name>`.
  const std::string& final_path() const { return final_; }
  /// Replaces any previous `<parent>/<name>` with the staging directory.
  void commit();

 private:
  void commit_now();

  std::string name_;
  std::string staging_;
  std::string final_;
  bool committed_ = false;
};

}  // namespace gradwire
