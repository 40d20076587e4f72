// Adds up wall-clock time spent in one kind of work (LibTorch training, codecs) while ns-3's
// event loop runs, so a run can report how much of its wall time ns-3 itself took.
#pragma once

#include <chrono>

namespace gradwire {

class WallClockAccount {
 public:
  /// Charges the lifetime of this object to `account` (which may be null: then nothing). A
  /// charge made while another on the same account is open adds nothing: the outer one
  /// covers its time (e.g. workers' pending computation run from inside a codec's charge).
  class Charge {
   public:
    explicit Charge(WallClockAccount* account)
        : account_(account != nullptr && account->open_++ == 0 ? account : nullptr),
          outer_(account),
          start_(std::chrono::steady_clock::now()) {}
    ~Charge() {
      if (account_) {
        account_->seconds_ +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      }
      if (outer_) --outer_->open_;
    }
    Charge(const Charge&) = delete;
    Charge& operator=(const Charge&) = delete;

   private:
    WallClockAccount* account_;  // null unless this is the outermost open charge
    WallClockAccount* outer_;    // the account whose open charges this one counts in
    std::chrono::steady_clock::time_point start_;
  };

  double seconds() const { return seconds_; }

 private:
  double seconds_ = 0.0;
  int open_ = 0;  // charges open now
};

}  // namespace gradwire
