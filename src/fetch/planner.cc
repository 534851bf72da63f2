#include "fetch/planner.h"

#include <algorithm>

namespace ferry::fetch {
namespace {

// Appends [offset, end) to normalised `out`, merging with the last range when they touch.
void AppendRun(std::vector<Range>& out, uint64_t offset, uint64_t end) {
  if (end <= offset) {
    return;
  }
  if (!out.empty() && offset <= out.back().end()) {
    Range& last = out.back();
    last.length = std::max(last.end(), end) - last.offset;
    return;
  }
  out.push_back({offset, end - offset});
}

}  // namespace

Planner::Planner(const PlannerConfig& config) : config_(config) {
  config_.page_size = std::max<uint32_t>(config_.page_size, 1);
  config_.max_chunks = std::max<uint32_t>(config_.max_chunks, 1);
  config_.max_chunk_bytes = std::max<uint32_t>(config_.max_chunk_bytes, 1);
  config_.max_request_bytes = std::max<uint64_t>(config_.max_request_bytes, 1);
}

void Planner::Missing(std::span<const Range> wanted,
                      uint64_t file_size,
                      const CoverageMap& cover,
                      std::vector<Range>& out) const {
  out.clear();
  const uint64_t ps = config_.page_size;
  for (const Range& w : wanted) {
    const uint64_t a = w.offset;
    const uint64_t b = std::min(w.end(), file_size);
    if (a >= b) {
      continue;
    }
    for (uint64_t page = a / ps; page <= (b - 1) / ps; ++page) {
      const uint64_t start = page * ps;
      const auto page_len = static_cast<uint32_t>(std::min<uint64_t>(ps, file_size - start));
      const auto need_lo = static_cast<uint32_t>(std::max(a, start) - start);
      const auto need_hi = static_cast<uint32_t>(std::min(b, start + page_len) - start);
      const PageCover c = cover.Cover(page);
      if (!c.empty() && c.lo <= need_lo && need_hi <= c.hi) {
        continue;  // held
      }
      if (c.empty()) {
        uint64_t from = config_.round_to_pages ? start : start + need_lo;
        // Another wanted range already needs bytes of this page: bridge to them, so that
        // the page receives one interval.
        if (!out.empty() && out.back().end() > start) {
          from = std::min(from, out.back().end());
        }
        AppendRun(out, from, config_.round_to_pages ? start + page_len : start + need_hi);
        continue;
      }
      // Partly held: fetch what is missing on either side of the held interval, touching it.
      const uint32_t left_lo = config_.round_to_pages ? 0 : std::min(need_lo, c.lo);
      const uint32_t right_hi = config_.round_to_pages ? page_len : std::max(need_hi, c.hi);
      AppendRun(out, start + left_lo, start + c.lo);
      AppendRun(out, start + c.hi, start + right_hi);
    }
  }
}

bool Planner::AllHeld(std::span<const Range> wanted,
                      uint64_t file_size,
                      const CoverageMap& cover) const {
  const uint64_t ps = config_.page_size;
  for (const Range& w : wanted) {
    const uint64_t a = w.offset;
    const uint64_t b = std::min(w.end(), file_size);
    if (a >= b) {
      continue;
    }
    for (uint64_t page = a / ps; page <= (b - 1) / ps; ++page) {
      const uint64_t start = page * ps;
      const auto need_lo = static_cast<uint32_t>(std::max(a, start) - start);
      const auto need_hi = static_cast<uint32_t>(std::min(b, start + ps) - start);
      const PageCover c = cover.Cover(page);
      if (c.empty() || c.lo > need_lo || need_hi > c.hi) {
        return false;
      }
    }
  }
  return true;
}

void Planner::Pack(std::span<const Range> missing, FetchPlan& out) const {
  out.clear();
  // Bridge small gaps first, then cut what became too long.
  size_t i = 0;
  while (i < missing.size()) {
    uint64_t start = missing[i].offset;
    uint64_t end = missing[i].end();
    size_t j = i + 1;
    while (j < missing.size() && missing[j].offset - end <= config_.iogap) {
      end = missing[j].end();
      ++j;
    }
    i = j;
    for (uint64_t pos = start; pos < end;) {
      const uint64_t len = std::min<uint64_t>(
          std::min<uint64_t>(config_.max_chunk_bytes, config_.max_request_bytes), end - pos);
      const bool need_new = out.reads.empty() || out.reads.back().count >= config_.max_chunks
                            || out.reads.back().bytes + len > config_.max_request_bytes;
      if (need_new) {
        out.reads.push_back({out.chunks.size(), 0, 0});
      }
      out.chunks.push_back({pos, len});
      out.reads.back().count += 1;
      out.reads.back().bytes += len;
      out.bytes += len;
      pos += len;
    }
  }
}

void Planner::Plan(std::span<const Range> wanted,
                   uint64_t file_size,
                   const CoverageMap& cover,
                   PlanScratch& scratch,
                   FetchPlan& out) const {
  scratch.wanted.assign(wanted.begin(), wanted.end());
  Normalize(scratch.wanted);
  Missing(scratch.wanted, file_size, cover, scratch.missing);
  Pack(scratch.missing, out);
}

}  // namespace ferry::fetch
