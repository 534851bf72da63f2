// Every real ROOT file of data/root, read by ferry, written again by ferry with the
// same schema under every codec, and read back: identical values, branch by branch. Object
// branches and leaf lists (not flat single-leaf branches) are left out. The same trees are
// also written as RNTuples and read back by the RNTuple reader.
#include <algorithm>

#include <gtest/gtest.h>

#include "rootio/rntuple.h"
#include "rootio/root_file.h"
#include "rootwrite/file_writer.h"
#include "rootwrite/rntuple_model.h"
#include "rootwrite/rntuple_writer.h"
#include "rootwrite/sample_rntuple.h"
#include "rootwrite/tree_writer.h"
#include "testing/testing.h"

namespace ferry::rootwrite {
namespace {

struct SourceTree {
  std::string path;
  std::vector<BranchSpec> specs;
  std::vector<rootio::Column> columns;
  int64_t entries = 0;
};

// The flat single-leaf branches of every tree, counters first, with all their values.
std::vector<SourceTree> ReadSource(const std::string& file) {
  std::vector<SourceTree> out;
  auto f = rootio::RootFile::OpenPath(file);
  EXPECT_TRUE(f.has_value()) << f.error().ToString();
  if (!f.has_value()) {
    return out;
  }
  auto paths = (*f)->TreePaths();
  EXPECT_TRUE(paths.has_value());
  for (const std::string& p : *paths) {
    auto t = (*f)->OpenTree(p);
    EXPECT_TRUE(t.has_value()) << p << ": " << t.error().ToString();
    const rootio::TreeInfo& info = (*t)->info();
    SourceTree st;
    st.path = p;
    st.entries = info.entries;
    auto usable = [&](int32_t bi) {
      const rootio::Branch& b = info.branches[static_cast<size_t>(bi)];
      return b.supported && b.leaves.size() == 1 && b.children.empty() && b.parent < 0;
    };
    std::vector<int32_t> order;
    auto emit = [&](int32_t bi) {
      if (std::find(order.begin(), order.end(), bi) == order.end()) {
        order.push_back(bi);
      }
    };
    for (int32_t bi : info.top_branches) {
      if (!usable(bi)) {
        continue;
      }
      const rootio::Leaf& leaf =
          info.leaves[static_cast<size_t>(info.branches[static_cast<size_t>(bi)].leaves[0])];
      if (leaf.jagged()) {
        int32_t cb = info.leaves[static_cast<size_t>(leaf.count_leaf)].branch;
        if (cb < 0 || !usable(cb)) {
          continue;
        }
        emit(cb);
      }
      emit(bi);
    }
    for (int32_t bi : order) {
      const rootio::Branch& b = info.branches[static_cast<size_t>(bi)];
      const rootio::Leaf& leaf = info.leaves[static_cast<size_t>(b.leaves[0])];
      BranchSpec s;
      s.name = b.name;
      s.type = leaf.type;
      s.len = leaf.type == rootio::LeafType::kString ? 1 : leaf.len;
      s.title = b.title;
      if (leaf.jagged()) {
        s.count = info.branches[static_cast<size_t>(
                                    info.leaves[static_cast<size_t>(leaf.count_leaf)].branch)]
                      .name;
      }
      auto col = (*t)->ReadLeaf(b.leaves[0], (*t)->All());
      EXPECT_TRUE(col.has_value()) << file << " > " << b.name << ": " << col.error().ToString();
      if (!col.has_value()) {
        continue;
      }
      st.specs.push_back(std::move(s));
      st.columns.push_back(std::move(*col));
    }
    if (!st.specs.empty()) {
      out.push_back(std::move(st));
    }
  }
  return out;
}

// A slice [a, b) of a column, as a column of its own.
rootio::Column Slice(const rootio::Column& c, int64_t a, int64_t b) {
  rootio::Column s;
  s.type = c.type;
  s.jagged = c.jagged;
  s.fixed_len = c.fixed_len;
  s.num_entries = b - a;
  const size_t unit = c.type == rootio::LeafType::kString ? 1 : c.value_size();
  if (c.jagged) {
    uint64_t base = c.offsets[static_cast<size_t>(a)];
    for (int64_t e = a; e <= b; ++e) {
      s.offsets.push_back(c.offsets[static_cast<size_t>(e)] - base);
    }
    s.bytes.assign(
        c.bytes.begin() + static_cast<ptrdiff_t>(base * unit),
        c.bytes.begin() + static_cast<ptrdiff_t>(c.offsets[static_cast<size_t>(b)] * unit));
  } else {
    size_t es = c.fixed_len * unit;
    s.bytes.assign(c.bytes.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(a) * es),
                   c.bytes.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(b) * es));
  }
  return s;
}

std::string OutName(const std::string& path) {
  std::string n = path;
  std::replace(n.begin(), n.end(), '/', '_');
  return n;
}

void WriteCopy(const std::string& out,
               const std::vector<SourceTree>& trees,
               const codec::Setting& s) {
  FileOptions fo;
  fo.compression = s;
  auto file = FileWriter::Create(out, fo);
  ASSERT_TRUE(file.has_value()) << file.error().ToString();
  for (const SourceTree& st : trees) {
    TreeOptions to;
    to.name = OutName(st.path);
    to.basket_size = 2000;  // several baskets even for small trees
    to.auto_flush = 0;
    TreeWriter tw(**file, to);
    for (const BranchSpec& spec : st.specs) {
      auto b = tw.AddBranch(spec);
      ASSERT_TRUE(b.has_value()) << b.error().ToString();
    }
    // Uneven batches exercise the batch and basket boundaries.
    for (int64_t a = 0; a < st.entries;) {
      int64_t b = std::min(st.entries, a + 37);
      std::vector<rootio::Column> slices;
      for (const rootio::Column& c : st.columns) {
        slices.push_back(Slice(c, a, b));
      }
      std::vector<const rootio::Column*> ptrs;
      for (const rootio::Column& c : slices) {
        ptrs.push_back(&c);
      }
      Status w = tw.WriteColumns(ptrs);
      ASSERT_TRUE(w.has_value()) << w.error().ToString();
      a = b;
    }
    Status c = tw.Close();
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
  }
  Status c = (*file)->Close();
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
}

TEST(RoundTrip, EveryRealFileUnderEveryCodec) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir dir;
  size_t compared = 0;
  for (const std::string& file : testing::AllRootDataFiles()) {
    SCOPED_TRACE(file);
    std::vector<SourceTree> trees = ReadSource(file);
    for (const char* codec : {"none", "zlib:1", "lzma:1", "zstd:5", "lz4"}) {
      SCOPED_TRACE(codec);
      std::string out = dir.File("copy.root");
      WriteCopy(out, trees, *codec::Setting::Parse(codec));
      auto f = rootio::RootFile::OpenPath(out);
      ASSERT_TRUE(f.has_value()) << f.error().ToString();
      for (const SourceTree& st : trees) {
        auto t = (*f)->OpenTree(OutName(st.path));
        ASSERT_TRUE(t.has_value()) << t.error().ToString();
        ASSERT_EQ((*t)->entries(), st.entries);
        ASSERT_EQ((*t)->info().branches.size(), st.specs.size());
        for (size_t i = 0; i < st.specs.size(); ++i) {
          const rootio::Branch& b = (*t)->info().branches[i];
          EXPECT_EQ(b.name, st.specs[i].name);
          if (!st.specs[i].title.empty()) {  // an empty title gets ROOT's default
            EXPECT_EQ(b.title, st.specs[i].title);
          }
          auto col = (*t)->ReadLeaf(b.leaves[0], (*t)->All());
          ASSERT_TRUE(col.has_value()) << b.name << ": " << col.error().ToString();
          const rootio::Column& want = st.columns[i];
          EXPECT_EQ(col->type, want.type) << b.name;
          EXPECT_EQ(col->jagged, want.jagged) << b.name;
          EXPECT_EQ(col->fixed_len, want.fixed_len) << b.name;
          EXPECT_EQ(col->offsets, want.offsets) << b.name;
          EXPECT_TRUE(col->bytes == want.bytes) << b.name;
          const rootio::Leaf& leaf = (*t)->info().leaves[static_cast<size_t>(b.leaves[0])];
          if (!st.specs[i].count.empty()) {
            ASSERT_TRUE(leaf.jagged()) << b.name;
            EXPECT_EQ((*t)->info().leaves[static_cast<size_t>(leaf.count_leaf)].name,
                      st.specs[i].count);
          }
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 10000u);
  std::printf("compared %zu branches\n", compared);
}

// The branches of a tree the RNTuple layout holds (all but jagged fixed arrays), with their
// columns.
SourceTree RntupleBranches(const SourceTree& st) {
  SourceTree out;
  out.path = st.path;
  out.entries = st.entries;
  for (size_t i = 0; i < st.specs.size(); ++i) {
    out.specs.push_back(st.specs[i]);
    int32_t counter = -1;
    if (CheckRntupleBranch(out.specs, out.specs.size() - 1, &counter).has_value()) {
      out.columns.push_back(Slice(st.columns[i], 0, st.entries));
    } else {
      out.specs.pop_back();
    }
  }
  return out;
}

void WriteRntupleCopy(const std::string& out, const std::vector<SourceTree>& trees) {
  auto file = FileWriter::Create(out, {});
  ASSERT_TRUE(file.has_value()) << file.error().ToString();
  for (const SourceTree& st : trees) {
    RntupleOptions o;
    o.name = OutName(st.path);
    o.page_bytes = 1024;  // many pages and clusters even for small trees
    o.zipped_cluster_bytes = 8 << 10;
    o.check_entries = 41;
    RntupleWriter w(**file, o);
    for (const BranchSpec& spec : st.specs) {
      ASSERT_TRUE(w.AddBranch(spec).has_value()) << spec.name;
    }
    for (int64_t a = 0; a < st.entries;) {
      int64_t b = std::min(st.entries, a + 37);
      std::vector<rootio::Column> slices;
      for (const rootio::Column& c : st.columns) {
        slices.push_back(Slice(c, a, b));
      }
      std::vector<const rootio::Column*> ptrs;
      for (const rootio::Column& c : slices) {
        ptrs.push_back(&c);
      }
      Status st_w = w.WriteColumns(ptrs);
      ASSERT_TRUE(st_w.has_value()) << st_w.error().ToString();
      a = b;
    }
    Status c = w.Close();
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
  }
  ASSERT_TRUE((*file)->Close().has_value());
}

// Every tree of the real files as an RNTuple of the importer's layout, several to a file,
// read back by ferry's reader to the tree's values: real strings, fixed arrays, counters of
// every integer type, NaNs.
TEST(RoundTrip, EveryRealFileAsRntuples) {
  FERRY_REQUIRE_ROOT_DATA();
  testing::TempDir dir;
  size_t compared = 0;
  for (const std::string& file : testing::AllRootDataFiles()) {
    SCOPED_TRACE(file);
    std::vector<SourceTree> trees;
    for (const SourceTree& st : ReadSource(file)) {
      trees.push_back(RntupleBranches(st));
    }
    const std::string out = dir.File("copy.root");
    WriteRntupleCopy(out, trees);
    auto f = rootio::RootFile::OpenPath(out);
    ASSERT_TRUE(f.has_value()) << f.error().ToString();
    for (const SourceTree& st : trees) {
      auto r = rootio::Rntuple::Open(**f, OutName(st.path));
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      ASSERT_EQ((*r)->entries(), static_cast<uint64_t>(st.entries));
      for (size_t i = 0; i < st.specs.size(); ++i) {
        bool counter = false;
        for (const BranchSpec& s : st.specs) {
          counter = counter || s.count == st.specs[i].name;
        }
        auto id = (*r)->FindField(st.specs[i].name);
        ASSERT_TRUE(id.has_value()) << st.specs[i].name;
        auto got = (*r)->Read(*id, 0, (*r)->entries());
        ASSERT_TRUE(got.has_value()) << st.specs[i].name << ": " << got.error().ToString();
        ASSERT_EQ(
            rootio::RntupleValue::List(*got).ToJson(),
            rootio::RntupleValue::List(sample::RntupleValuesOf(st.columns[i], counter)).ToJson())
            << st.specs[i].name;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 2000u);
  std::printf("compared %zu fields\n", compared);
}

}  // namespace
}  // namespace ferry::rootwrite
