#include "nodes/schemes/ComputeBatch.h"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "nodes/schemes/WallClockAccount.h"

namespace gradwire {

struct ComputeBatch::Pool {
  struct Job {
    std::function<void()> work;
    bool in_order = false;
    std::exception_ptr error;
  };

  std::vector<Job> pending;  // submitted, not yet run (the event loop's thread only)

  // One batch in flight. `jobs` and `parallel_jobs` change only while no pool thread is
  // active (under `mutex`); `next` hands out parallel jobs, each to one thread.
  std::mutex mutex;
  std::condition_variable wake;
  std::condition_variable done;
  std::vector<Job> jobs;
  std::vector<std::size_t> parallel_jobs;  // indices into `jobs`
  std::atomic<std::size_t> next{0};
  std::size_t finished = 0;  // parallel jobs finished
  int active = 0;            // pool threads inside a batch
  unsigned long long batch = 0;
  bool stop = false;
  std::vector<std::thread> threads;

  void take_jobs() {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= parallel_jobs.size()) return;
      Job& job = jobs[parallel_jobs[i]];
      try {
        job.work();
      } catch (...) {
        job.error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (++finished == parallel_jobs.size()) done.notify_all();
    }
  }

  void serve() {
    unsigned long long seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stop || batch != seen; });
        if (stop) return;
        seen = batch;
        ++active;
      }
      take_jobs();
      std::lock_guard<std::mutex> lock(mutex);
      if (--active == 0) done.notify_all();
    }
  }
};

ComputeBatch::ComputeBatch(int parallel, WallClockAccount* account)
    : pool_(std::make_unique<Pool>()), account_(account) {
  if (parallel < 1) throw std::invalid_argument("ComputeBatch: parallel must be at least 1");
  for (int i = 1; i < parallel; ++i) pool_->threads.emplace_back([p = pool_.get()] { p->serve(); });
}

ComputeBatch::~ComputeBatch() {
  {
    std::lock_guard<std::mutex> lock(pool_->mutex);
    pool_->stop = true;
  }
  pool_->wake.notify_all();
  for (auto& t : pool_->threads) t.join();
}

int ComputeBatch::parallel() const { return static_cast<int>(pool_->threads.size()) + 1; }

std::size_t ComputeBatch::pending() const { return pool_->pending.size(); }

void ComputeBatch::submit(std::function<void()> job, bool in_order) {
  pool_->pending.push_back(Pool::Job{std::move(job), in_order, nullptr});
}

void ComputeBatch::run() {
  Pool& p = *pool_;
  if (p.pending.empty()) return;
  WallClockAccount::Charge charge(account_);
  jobs_run_ += p.pending.size();
  ++batches_run_;
  {
    std::unique_lock<std::mutex> lock(p.mutex);
    p.done.wait(lock, [&] { return p.active == 0; });  // a late thread of the last batch
    p.jobs = std::move(p.pending);
    p.pending.clear();
    p.parallel_jobs.clear();
    for (std::size_t i = 0; i < p.jobs.size(); ++i) {
      if (!p.jobs[i].in_order) p.parallel_jobs.push_back(i);
    }
    p.next = 0;
    p.finished = 0;
    ++p.batch;
  }
  p.wake.notify_all();
  // This thread runs the in-order jobs, in order, then helps with the rest.
  for (Pool::Job& job : p.jobs) {
    if (!job.in_order) continue;
    try {
      job.work();
    } catch (...) {
      job.error = std::current_exception();
    }
  }
  p.take_jobs();
  std::vector<Pool::Job> jobs;
  {
    std::unique_lock<std::mutex> lock(p.mutex);
    p.done.wait(lock, [&] { return p.finished == p.parallel_jobs.size() && p.active == 0; });
    jobs = std::move(p.jobs);
    p.jobs.clear();
    p.parallel_jobs.clear();
  }
  for (const Pool::Job& job : jobs) {
    if (job.error) std::rethrow_exception(job.error);
  }
}

}  // namespace gradwire
