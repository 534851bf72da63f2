// Helpers shared by the replica tests: what a ROOT file holds, value by value, through any
// byte source (the original in memory, a replica's virtual file through the cache), a test
// cache's config with the replica tier plugged in, and the sample tree the stage tests relocate.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cache/config.h"
#include "cache/entry_store.h"
#include "cache/url.h"
#include "io/byte_source.h"
#include "replica/hooks.h"
#include "rootio/rntuple.h"
#include "rootio/root_file.h"
#include "rootwrite/sample_tree.h"
#include "testing/cache_testing.h"
#include "testing/testing.h"

namespace ferry::replica {

// testing::CacheTestConfig with the replica tier plugged in (as the plug-in, proxy and CLI do).
inline cache::Config ServingConfig(const std::string& dir) {
  cache::Config c = testing::CacheTestConfig(dir);
  c.replica_hooks = Hooks();
  return c;
}

// The cache key of `url` (a test's URL is always valid).
inline std::string KeyOf(const std::string& url) {
  return cache::EntryKey(cache::NormalizeUrl(url, {}).value());
}

// Every value of every TTree leaf and RNTuple top-level field, as JSON-ish text by name
// (an RNTuple of more than 10,000,000 entries: its last 1,000, as rntuple_test.cc does).
// `only`: the names to read (all when empty).
inline std::map<std::string, std::string> Values(io::ByteSource& src,
                                                 const std::set<std::string>& only = {}) {
  std::map<std::string, std::string> out;
  auto f = rootio::RootFile::Open(src);
  EXPECT_TRUE(f.has_value()) << f.error().ToString();
  if (!f) {
    return out;
  }
  auto wanted = [&](const std::string& name) {
    return only.empty() || only.count(name) != 0;
  };
  for (const std::string& p : (*f)->TreePaths().value_or(std::vector<std::string>{})) {
    auto t = (*f)->OpenTree(p);
    EXPECT_TRUE(t.has_value()) << t.error().ToString();
    for (size_t li = 0; t && li < (*t)->info().leaves.size(); ++li) {
      const std::string name = p + "/" + (*t)->info().leaves[li].name;
      if (!wanted(name) || !(*t)->CheckReadable(static_cast<int32_t>(li))) {
        continue;
      }
      auto c = (*t)->ReadLeaf(static_cast<int32_t>(li), (*t)->All());
      EXPECT_TRUE(c.has_value()) << c.error().ToString();
      if (c) {
        out[name] = std::string(c->bytes.begin(), c->bytes.end());
      }
    }
  }
  auto names = rootio::RntupleNames(**f);
  for (const std::string& n : names.value_or(std::vector<std::string>{})) {
    auto r = rootio::Rntuple::Open(**f, n);
    EXPECT_TRUE(r.has_value()) << n << ": " << r.error().ToString();
    if (!r) {
      continue;
    }
    const uint64_t entries = (*r)->entries();
    const uint64_t first = entries > 10000000 ? entries - 1000 : 0;
    for (uint32_t id : (*r)->TopLevelFields()) {
      const std::string name = n + "/" + (*r)->FieldPath(id);
      if (!wanted(name)) {
        continue;
      }
      auto v = (*r)->Read(id, first, entries - first);
      EXPECT_TRUE(v.has_value()) << name << ": " << v.error().ToString();
      std::string& text = out[name];
      for (const rootio::RntupleValue& x : v.value_or(std::vector<rootio::RntupleValue>{})) {
        text += x.ToJson();
        text += ',';
      }
    }
  }
  return out;
}

// The sample tree, zlib-1, 8 clusters of 128 entries, written in `dir`: its bytes.
inline std::vector<uint8_t> SampleTreeBytes(const testing::TempDir& dir) {
  rootwrite::TreeOptions to;
  to.auto_flush = 128;
  to.basket_size = 32000;
  const std::string path = dir.File("sample.root");
  Status st = rootwrite::sample::Write(path, rootwrite::sample::Fixed(), to, false);
  EXPECT_TRUE(st) << st.error().ToString();
  return testing::ReadWholeFile(path);
}

}  // namespace ferry::replica
