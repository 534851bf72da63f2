#include "base/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/strings.h"

namespace ferry {

bool Progress::TerminalEnabled() {
  const char* env = std::getenv("FERRY_PROGRESS");
  if (env != nullptr && std::strcmp(env, "0") == 0) {
    return false;
  }
  return ::isatty(STDERR_FILENO) == 1;
}

Progress::Progress(std::string label, uint64_t total, std::string unit)
    : label_(std::move(label)),
      total_(total),
      unit_(std::move(unit)),
      enabled_(TerminalEnabled()),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() {
  Finish();
}

void Progress::Add(uint64_t n) {
  done_.fetch_add(n, std::memory_order_relaxed);
  MaybeDraw();
}

void Progress::Set(uint64_t done) {
  done_.store(done, std::memory_order_relaxed);
  MaybeDraw();
}

void Progress::SetNote(std::string note) {
  MutexLock lock(mu_);
  note_ = std::move(note);
}

void Progress::Finish() {
  if (!enabled_) {
    return;
  }
  MutexLock lock(mu_);
  if (finished_) {
    return;
  }
  DrawLocked(std::chrono::steady_clock::now());
  finished_ = true;
  std::fputs("\r\033[K", stderr);
  (void)std::fflush(stderr);  // the progress line is cosmetic: a failed write loses nothing
}

void Progress::MaybeDraw() {
  if (!enabled_) {
    return;
  }
  auto now = std::chrono::steady_clock::now();
  // A thread that finds the line being drawn skips: the next Add() draws it again.
  if (!mu_.TryLock()) {
    return;
  }
  if (!finished_ && now - last_draw_ >= std::chrono::milliseconds(200)) {
    DrawLocked(now);
  }
  mu_.Unlock();
}

void Progress::DrawLocked(std::chrono::steady_clock::time_point now) {
  last_draw_ = now;
  double secs = std::chrono::duration<double>(now - start_).count();
  auto done = static_cast<double>(done_.load(std::memory_order_relaxed));
  double rate = secs > 0 ? done / secs : 0;
  std::string line = "\r\033[K" + label_ + " ";
  char buf[96];
  if (unit_ == "B") {
    line += HumanBytes(done);
    if (total_ > 0) {
      line += " / " + HumanBytes(static_cast<double>(total_));
    }
    line += "  " + HumanBytes(rate) + "/s";
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", done);
    line += buf;
    if (total_ > 0) {
      std::snprintf(buf, sizeof buf, " / %llu", static_cast<unsigned long long>(total_));
      line += buf;
    }
    std::snprintf(buf, sizeof buf, " %s  %.3g %s/s", unit_.c_str(), rate, unit_.c_str());
    line += buf;
  }
  if (total_ > 0) {
    double frac = done / static_cast<double>(total_);
    std::snprintf(buf, sizeof buf, "  %3.0f%%", frac * 100.0);
    line += buf;
    if (rate > 0 && frac < 1.0) {
      double eta = (static_cast<double>(total_) - done) / rate;
      std::snprintf(buf, sizeof buf, "  ETA %02d:%02d", static_cast<int>(eta) / 60,
                    static_cast<int>(eta) % 60);
      line += buf;
    }
  }
  if (!note_.empty()) {
    line += "  " + note_;
  }
  std::fputs(line.c_str(), stderr);
  (void)std::fflush(stderr);  // cosmetic, as in Finish()
}

}  // namespace ferry
