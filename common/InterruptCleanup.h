// What an interrupted command leaves behind: nothing. SIGINT, SIGTERM and SIGHUP are taken by
// one thread (sigwait), not an asynchronous handler, so clean-up runs in ordinary code: it
// stops the child processes registered here, removes the staging folders registered here,
// and exits with 128 + the signal (130 for SIGINT, 143 for SIGTERM).
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>

namespace gradwire {

class InterruptCleanup {
 public:
  /// Blocks the signals in this thread (so in every thread created after it) and starts the
  /// thread that waits for them. Call first thing in main; later calls do nothing.
  static void install();

  /// A folder to remove if the process is interrupted before forget_folder.
  static void remember_folder(const std::string& path);
  static void forget_folder(const std::string& path);
  /// A child to stop (SIGTERM) if the process is interrupted before forget_child.
  static void remember_child(pid_t pid);
  static void forget_child(pid_t pid);

  /// Runs `action` while no interruption can be cleaning up (e.g. renaming a staging folder
  /// into place): an interruption waits for it, then finds the folder already forgotten.
  template <typename F>
  static void exclusive(F&& action) {
    Lock lock;
    action();
  }

  /// For a command whose work ends with committing one run folder (run, serve): once that
  /// commit is done, an interruption is ignored (the command finishes and exits 0), so a late
  /// SIGINT does not report a completed run as interrupted.
  static void finish_with_commit();
  /// Called by RunDirectory::commit inside exclusive(), once its folder is in place.
  static void committed_locked();

  /// While a handler is set, an interruption calls it on the signal thread instead of the
  /// clean-up above: for a command whose clean-up needs more than killing children and removing
  /// folders (network namespaces, TAP devices). The command then exits 128 + the signal itself.
  /// An empty function restores the default.
  static void divert(std::function<void(int)> handler);

  /// In a forked child before exec: the signals back to their defaults and unblocked, and the
  /// child ends when this process dies (PR_SET_PDEATHSIG), however it dies.
  static void prepare_child();

 private:
  struct Lock {
    Lock();
    ~Lock();
  };
};

}  // namespace gradwire
