// Progress: a one-line progress indicator with rate and ETA for long commands.
//
// Draws on stderr only when stderr is a terminal (and FERRY_PROGRESS is not "0"); in pipes and
// under CI it prints nothing, so --json output and logs stay clean. Redraws at most 5 times a
// second. Thread-safe: Add() may be called from several threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "base/mutex.h"

namespace ferry {

class Progress {
 public:
  // total = 0 means unknown (no percentage, no ETA). unit: "B" formats bytes, anything else
  // is printed after the count (e.g. "events").
  Progress(std::string label, uint64_t total, std::string unit = "B");
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  void Add(uint64_t n);
  void Set(uint64_t done);
  // Extra text shown at the end of the line (e.g. "8 streams, min/max 0.97").
  void SetNote(std::string note);
  // Clears the line. Called by the destructor.
  void Finish();

  bool enabled() const { return enabled_; }
  static bool TerminalEnabled();

 private:
  // Draws at most every 200 ms; skips when another thread is drawing.
  void MaybeDraw();
  void DrawLocked(std::chrono::steady_clock::time_point now) FERRY_REQUIRES(mu_);

  std::string label_;
  uint64_t total_;
  std::string unit_;
  bool enabled_;
  std::atomic<uint64_t> done_{0};
  std::chrono::steady_clock::time_point start_;
  Mutex mu_;
  bool finished_ FERRY_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point last_draw_ FERRY_GUARDED_BY(mu_);
  std::string note_ FERRY_GUARDED_BY(mu_);
};

}  // namespace ferry
