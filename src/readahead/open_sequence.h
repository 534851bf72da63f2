// OpenSequence: predicts the next file a reader will open from the order of its opens.
//
// A reader that decodes a dataset's files one after another — ROOT's TChain over a sorted
// listing, uproot's iterate, `ferry analyze agc --threads 1` — opens each file only after the
// last one is done, and pays the new file's open and metadata round trips while its cores wait.
// Such a reader opens the files of one directory in name order, so once two opens in a row were
// neighbours in the directory's sorted listing, the next names are predicted, and the caller
// fetches those files' metadata (and first clusters) before they are opened. How many: a
// directory's depth, kMinDepth at first. A directory's first open that is its listing's first
// name bets that a chain starts there and predicts the next kFirstBet files: their opens and
// metadata (no clusters yet: no branch was read) travel while the first file's metadata fills
// the new connection's slow start, which has round trips to spare; a bet on the next file
// alone left the others' opens to the reader's second open, one metadata fetch later (issue 38:
// `agc --reads 0 --opens 1`, cold, 5 zlib-1 files through 40 ms and 1 Gbit/s: 1.14x -> 1.09x
// its in-order limit; python client 1.05x -> 0.97x; wasted when not taken: three opens and
// ~0.2 MB of metadata each). A reader that opens its files back to back (`ferry analyze agc
// --opens 1`), or reads small files quickly, asks for the next file sooner than one file's open,
// metadata and first clusters take (three round trips), so only several fetched at once keep
// ahead of it: each time the reader catches up with a prediction still being fetched (CaughtUp)
// the depth doubles, up to kMaxDepth; each time a prediction was dropped unopened because the
// reader was slow to come to it (Expired) it halves again.
//
// A reader that finished one directory's sequence (its last open took a prediction and was the
// listing's last name) and then opens the first name of another directory is going on to the
// next dataset of its list (a TChain over several): that first open already follows, at the
// depth the reader reached, so the new dataset's second file is not opened cold.
//
// Each directory has its own sequence (two datasets read interleaved are two sequences). A
// prediction is used when a later open in its directory takes it; one that open skipped is
// wasted, and an open that takes none of the pending predictions wastes them all (the reader
// left the sequence). Once a directory's wasted predictions outnumber its used ones by
// kMaxWastedLead, it is predicted no more (a reader whose opens do not follow the listing, such
// as a shuffled file list).
//
// Pure logic: the caller supplies each directory's sorted listing (or none yet) and does the
// fetching. Thread-safety: none (the caller serialises OnOpen).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ferry::readahead {

class OpenSequence {
 public:
  static constexpr uint64_t kMaxWastedLead = 2;
  static constexpr size_t kMinDepth = 3;
  static constexpr size_t kFirstBet = kMinDepth;
  static constexpr size_t kMaxDepth = 8;

  // A file `name` of directory `dir` was opened; `listing`: the directory's file names, sorted
  // (empty when not known yet). Returns the names to fetch ahead that were not predicted before,
  // in listing order (none when the opens do not follow the listing).
  std::vector<std::string> OnOpen(const std::string& dir,
                                  const std::string& name,
                                  const std::vector<std::string>& listing);

  // The reader opened a predicted file of `dir` before its fetch ended: predict further ahead.
  void CaughtUp(const std::string& dir);
  // The predicted `name` of `dir` was dropped unopened (kept too long): predict less far ahead;
  // the name may be predicted again when an open brings it into reach.
  void Expired(const std::string& dir, const std::string& name);
  // How many names after an open `dir` predicts now.
  size_t depth(const std::string& dir) const;

  uint64_t predicted() const { return predicted_; }
  uint64_t used() const { return used_; }
  uint64_t wasted() const { return wasted_; }

 private:
  struct Dir {
    long last = -1;                    // index in the listing of the last open, -1: none
    bool finished = false;             // the last open took a prediction and ended the listing
    std::vector<std::string> pending;  // predicted, not opened yet, in listing order
    uint64_t used = 0;
    uint64_t wasted = 0;
    size_t depth = kMinDepth;
  };
  // Whether `dir`'s first open, at its first name, goes on from the sequence the reader just
  // finished in another directory; then `d` takes that sequence's depth.
  bool GoesOn(const std::string& dir, Dir& d);

  std::map<std::string, Dir> dirs_;
  std::string last_dir_;  // the directory of the last open
  uint64_t predicted_ = 0;
  uint64_t used_ = 0;
  uint64_t wasted_ = 0;
};

}  // namespace ferry::readahead
